/**
 * Which store backend the process runs on ({@link io.sluice.store.StoreSettings}); the backends are
 * in {@code store.memory} and {@code store.redis}, behind the ports of {@code core.store}.
 */
@NullMarked
package io.sluice.store;

import org.jspecify.annotations.NullMarked;
