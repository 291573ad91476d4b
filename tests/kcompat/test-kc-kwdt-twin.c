// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/* kwdt's buggy twin: it swallows a deferral of its interrupt. */
#define KC_TWIN 1
#include "test-kc-kwdt.c"
