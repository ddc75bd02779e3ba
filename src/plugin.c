// SPDX-License-Identifier: Apache-2.0
/* placeholder until the ABI adapters land */
int rn_plugin_placeholder;
