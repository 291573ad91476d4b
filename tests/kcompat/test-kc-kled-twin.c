// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/*
 * kled's twin: a changed errno through dev_err_probe() and an ignored
 * failed action, each a finding that names its lines.
 */
#define KC_TWIN 1
#include "test-kc-kled.c"
