package io.sluice.store.redis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A Lua script of this package's resources, with the SHA-1 that {@code EVALSHA} names it by. Each
 * port class owns its script as a constant and registers it on its {@link RedisConnection}, which
 * loads every registered script at warm-up.
 *
 * @param name the resource's file name ({@code token_bucket.lua})
 * @param text the script
 * @param sha its SHA-1, hex
 */
record RedisScript(String name, String text, String sha) {
  /** Reads {@code name} from the classpath beside this class. */
  static RedisScript load(String name) {
    try (InputStream in = RedisScript.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " missing from the classpath");
      }
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return new RedisScript(name, text, sha1(text));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String sha1(String s) {
    try {
      return HexFormat.of()
          .formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
