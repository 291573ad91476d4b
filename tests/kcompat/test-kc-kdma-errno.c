// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/* kdma's first buggy twin: -EINVAL when devm_kcalloc() fails. */
#define KC_TWIN 1
#include "test-kc-kdma.c"
