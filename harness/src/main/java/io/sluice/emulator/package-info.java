/** Envoy emulator: plays Envoy's ext_proc filter against a Sluice server. */
@NullMarked
package io.sluice.emulator;

import org.jspecify.annotations.NullMarked;
