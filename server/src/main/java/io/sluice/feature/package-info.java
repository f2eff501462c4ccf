/**
 * Feature modules: a feature (retry control is the first) joins the server in one place, its {@link
 * io.sluice.feature.Feature}, which declares its store port ({@link io.sluice.feature.StorePort}:
 * how it is built on memory and on Redis) and contributes, per config snapshot, its pre-decision
 * check (at its place in the chain), its listeners and its decision-record fields. Its config
 * section is a {@link io.sluice.config.ConfigSection}. The bootstrap's list of features is the
 * registration line; nothing else names a feature. Above {@code core}, {@code config}, {@code
 * store} and {@code observability}, below {@code bootstrap}.
 */
@NullMarked
package io.sluice.feature;

import org.jspecify.annotations.NullMarked;
