/**
 * The policy file: {@link io.sluice.config.ConfigLoader} reads the YAML into one validated,
 * immutable {@link io.sluice.config.SluiceConfig} (a section class per top-level section), every
 * error with its YAML path; {@link io.sluice.config.Secrets} resolves secret references.
 */
@NullMarked
package io.sluice.config;

import org.jspecify.annotations.NullMarked;
