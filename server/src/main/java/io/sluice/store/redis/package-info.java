/**
 * The Redis store ({@link io.sluice.store.redis.RedisStore}) on Lettuce: counters, token buckets,
 * replica shares and tenant slots by Lua script, for single, Sentinel and Cluster deployments.
 */
@NullMarked
package io.sluice.store.redis;

import org.jspecify.annotations.NullMarked;
