package io.sluice.core.retry;

import io.sluice.core.store.PoolKeys;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The store keys of retry control, all of one pool ({@link PoolKeys#key}): an operation is the
 * tenant's own (two tenants may use the same idempotency key without meeting), and a client's id
 * longer than {@value #MAX_ID_CHARS} characters is replaced by its SHA-256, so no key grows with
 * client input.
 */
public final class RetryKeys {
  /** Operation and tenant ids are kept as they are up to this length. */
  public static final int MAX_ID_CHARS = 128;

  private RetryKeys() {}

  /** {@code <ns>{<pool>}:retry:seen:<tenant>:<operation>}. */
  public static String seen(String ns, String pool, String tenant, String operation) {
    return PoolKeys.key(ns, pool, "retry:seen:" + id(tenant) + ":" + id(operation));
  }

  /** {@code <ns>{<pool>}:retry:op:<tenant>:<operation>}: the in-flight claim. */
  public static String operation(String ns, String pool, String tenant, String operation) {
    return PoolKeys.key(ns, pool, "retry:op:" + id(tenant) + ":" + id(operation));
  }

  /** By operation when there is one, else by tenant. */
  public static String refusal(String ns, String pool, String tenant, @Nullable String operation) {
    return PoolKeys.key(
        ns,
        pool,
        operation == null
            ? "retry:refused:t:" + id(tenant)
            : "retry:refused:o:" + id(tenant) + ":" + id(operation));
  }

  /** {@code <ns>{<pool>}:retry:budget:<tenant>}, or {@code ...:budget:*} for the pool's. */
  public static String budget(String ns, String pool, @Nullable String tenantOrNull) {
    return PoolKeys.key(
        ns, pool, tenantOrNull == null ? "retry:budget:*" : "retry:budget:t:" + id(tenantOrNull));
  }

  /** {@code id} as it is when short, else {@code h:<sha-256 hex>}. */
  static String id(String id) {
    if (id.length() <= MAX_ID_CHARS) {
      return id;
    }
    try {
      return "h:"
          + HexFormat.of()
              .formatHex(
                  MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
