package io.sluice.core.intake;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * The marker a dispatched job carries through Envoy ({@code x-sluice-dispatch}): {@code
 * <id>.<expires epoch ms>.<hex HMAC-SHA256>}, the MAC over the id, the expiry and the job's tenant
 * with a secret only the replicas hold. A request that carries a valid one is a job this process
 * (or a peer) dispatched: admitted against its class, never taken in again. The MAC is compared in
 * constant time; the secret never leaves this object ({@link #toString} does not show it).
 */
public final class DispatchMarker {
  /** The request header that carries it. */
  public static final String HEADER = "x-sluice-dispatch";

  private static final String ALGORITHM = "HmacSHA256";
  private static final HexFormat HEX = HexFormat.of();
  private static final int MAC_HEX = 64;
  private static final int MAX_CHARS = 256;

  private final SecretKeySpec key;

  /** A marker keyed by {@code secret} (at least 16 bytes). */
  public DispatchMarker(byte[] secret) {
    if (secret.length < 16) {
      throw new IllegalArgumentException("the dispatch secret must be at least 16 bytes");
    }
    this.key = new SecretKeySpec(secret.clone(), ALGORITHM);
  }

  /** The marker of job {@code id} of {@code tenant}, valid until {@code expiresMillis}. */
  public String sign(String id, String tenant, long expiresMillis) {
    return id + '.' + expiresMillis + '.' + HEX.formatHex(mac(id, expiresMillis, tenant));
  }

  /** The job id a marker names (its text before the first dot), or null when it names none. */
  public static @Nullable String jobId(String marker) {
    int a = marker.indexOf('.');
    return a <= 0 ? null : marker.substring(0, a);
  }

  /** Why {@code marker} is refused for {@code tenant} at {@code nowMillis}, or null: valid. */
  public @Nullable String invalid(String marker, String tenant, long nowMillis) {
    if (marker.length() > MAX_CHARS) {
      return "malformed";
    }
    int a = marker.indexOf('.');
    int b = a < 0 ? -1 : marker.indexOf('.', a + 1);
    if (a <= 0 || b < 0 || marker.length() - b - 1 != MAC_HEX) {
      return "malformed";
    }
    String id = marker.substring(0, a);
    long expires;
    byte[] given;
    try {
      expires = Long.parseLong(marker, a + 1, b, 10);
      given = HEX.parseHex(marker, b + 1, marker.length());
    } catch (IllegalArgumentException e) { // NumberFormatException included
      return "malformed";
    }
    if (!MessageDigest.isEqual(given, mac(id, expires, tenant))) {
      return "forged";
    }
    return nowMillis >= expires ? "expired" : null;
  }

  private byte[] mac(String id, long expires, String tenant) {
    try {
      Mac m = Mac.getInstance(ALGORITHM);
      m.init(key);
      m.update(id.getBytes(StandardCharsets.UTF_8));
      m.update((byte) '\n');
      m.update(Long.toString(expires).getBytes(StandardCharsets.US_ASCII));
      m.update((byte) '\n');
      return m.doFinal(tenant.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
    }
  }

  @Override
  public String toString() {
    return "DispatchMarker[secret redacted]";
  }
}
