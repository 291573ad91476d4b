// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat pci */
/* kmb's buggy twin: devm_add_action() where devm_add_action_or_reset() is due. */
#define KC_TWIN 1
#include "test-kc-kmb.c"
