/**
 * The in-process store ({@link io.sluice.store.memory.InMemoryStore}): counters and token buckets
 * of a single replica, bounded in bytes and entries.
 */
@NullMarked
package io.sluice.store.memory;

import org.jspecify.annotations.NullMarked;
