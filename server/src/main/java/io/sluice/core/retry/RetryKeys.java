package io.sluice.core.retry;

import io.sluice.core.store.PoolKeys;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The store keys of retry control, all of one pool ({@link PoolKeys#key}): an operation is the
 * tenant's own (two tenants may use the same idempotency key without meeting), every client-chosen
 * part is escaped so that the parts of a key split one way only ({@link #id}), and a client's id
 * longer than {@value #MAX_ID_CHARS} characters is replaced by its SHA-256, so no key grows with
 * client input. The anonymous tenant's requests are counted per client address when they carry one
 * ({@link #who}).
 */
public final class RetryKeys {
  /** Operation and tenant ids are kept as they are up to this length. */
  public static final int MAX_ID_CHARS = 128;

  private RetryKeys() {}

  /** {@code <ns>{<pool>}:retry:seen:<tenant>:<operation>}. */
  public static String seen(String ns, String pool, String tenant, String operation) {
    return seen(ns, pool, tenant, null, operation);
  }

  /**
   * As above, of one client of the anonymous tenant when {@code client} is not null ({@link #who}).
   */
  public static String seen(
      String ns, String pool, String tenant, @Nullable String client, String operation) {
    return PoolKeys.key(ns, pool, "retry:seen:" + who(tenant, client) + ":" + id(operation));
  }

  /** {@code <ns>{<pool>}:retry:op:<tenant>:<operation>}: the in-flight claim. */
  public static String operation(String ns, String pool, String tenant, String operation) {
    return operation(ns, pool, tenant, null, operation);
  }

  /** As above, of one client of the anonymous tenant when {@code client} is not null. */
  public static String operation(
      String ns, String pool, String tenant, @Nullable String client, String operation) {
    return PoolKeys.key(ns, pool, "retry:op:" + who(tenant, client) + ":" + id(operation));
  }

  /** By operation when there is one, else by tenant. */
  public static String refusal(String ns, String pool, String tenant, @Nullable String operation) {
    return refusal(ns, pool, tenant, null, operation);
  }

  /** As above, of one client of the anonymous tenant when {@code client} is not null. */
  public static String refusal(
      String ns, String pool, String tenant, @Nullable String client, @Nullable String operation) {
    String who = who(tenant, client);
    return PoolKeys.key(
        ns,
        pool,
        operation == null
            ? "retry:refused:t:" + who
            : "retry:refused:o:" + who + ":" + id(operation));
  }

  /** {@code <ns>{<pool>}:retry:budget:<tenant>}, or {@code ...:budget:*} for the pool's. */
  public static String budget(String ns, String pool, @Nullable String tenantOrNull) {
    return budget(ns, pool, tenantOrNull, null);
  }

  /**
   * As above; a tenant's bucket is one client's of the anonymous tenant when {@code client} is not
   * null (ignored for the pool's).
   */
  public static String budget(
      String ns, String pool, @Nullable String tenantOrNull, @Nullable String client) {
    return PoolKeys.key(
        ns,
        pool,
        tenantOrNull == null ? "retry:budget:*" : "retry:budget:t:" + who(tenantOrNull, client));
  }

  /** The prefix of a client's part: {@code %40} never occurs in an escaped id ({@link #escape}). */
  static final String CLIENT_PREFIX = "anonymous%40";

  /**
   * Whose attempts a key counts: the tenant ({@link #id}), or with {@code client} one client of the
   * anonymous tenant, {@code anonymous%40<id(client)>}. No tenant's part equals a client's: an
   * escaped id holds {@code %} only in {@code %25} and {@code %3A}, and a hashed one starts {@code
   * h:}; so the parts still split one way only.
   */
  static String who(String tenant, @Nullable String client) {
    return client == null ? id(tenant) : CLIENT_PREFIX + id(client);
  }

  /**
   * {@code id} as one part of a key: as it is when short and free of {@code :} and {@code %}; with
   * those two percent-encoded ({@code %3A}, {@code %25}) when short; else {@code h:<sha-256 hex>}.
   * A part therefore never holds the separator {@code :} (a hashed one is the only part with it,
   * and no escaped part starts {@code h:}), so parts joined by {@code :} split one way only: {@code
   * org} + {@code team:K} is not {@code org:team} + {@code K}.
   */
  static String id(String id) {
    if (id.length() <= MAX_ID_CHARS) {
      return escape(id);
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

  /** Percent-encodes {@code %} and {@code :}; the text itself when it has neither. */
  static String escape(String id) {
    if (id.indexOf(':') < 0 && id.indexOf('%') < 0) {
      return id;
    }
    StringBuilder b = new StringBuilder(id.length() + 8);
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      switch (c) {
        case ':' -> b.append("%3A");
        case '%' -> b.append("%25");
        default -> b.append(c);
      }
    }
    return b.toString();
  }
}
