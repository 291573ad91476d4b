// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/* krtc's buggy twin: a deferral of its interrupt becomes -ENODEV. */
#define KC_TWIN 1
#include "test-kc-krtc.c"
