/**
 * The Redis stores on Lettuce, for single, Sentinel and Cluster deployments: one {@link
 * io.sluice.store.redis.RedisConnection} per process, shared by one class per store port, each
 * owning its Lua script (counters and token buckets, replica shares, adaptive limits, tenant slots,
 * retry attempts, learned reserves).
 */
@NullMarked
package io.sluice.store.redis;

import org.jspecify.annotations.NullMarked;
