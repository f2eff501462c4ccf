/** Envoy emulator: plays Envoy's ext_proc filter against a Sluice server. */
package io.sluice.emulator;
