// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/* kdma's second buggy twin: an unmanaged table leaked on error paths. */
#define KC_TWIN 2
#include "test-kc-kdma.c"
