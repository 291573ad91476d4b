// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat tsan */
/* krng's buggy twin: its remove calls free_irq() on a managed interrupt. */
#define KC_TWIN 1
#include "test-kc-krng.c"
