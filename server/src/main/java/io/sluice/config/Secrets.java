package io.sluice.config;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Redaction of credentials before anything reaches {@code /config}, a log line, an HTTP answer or
 * an error message: values of keys named like a credential ({@code REDIS_AUTH}, {@code *PASSWORD*},
 * {@code *SECRET*}, {@code *TOKEN*}, ...), the password part of any URL ({@code
 * redis://user:pass@host}) and, through a {@link Redactor}, every occurrence of a known secret
 * value in free text (a driver's error message that echoes its input).
 *
 * <p>Concurrency: stateless; a {@link Redactor} is immutable.
 */
public final class Secrets {
  /** What a secret is replaced with. */
  public static final String MASK = "***";

  private static final Pattern SECRET_KEY =
      Pattern.compile(
          "(?i).*(AUTH|PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|PRIVATE_?KEY|API_?KEY).*");

  /**
   * {@code scheme://userinfo@} with a scheme (userinfo may be {@code user:pass}, {@code :pass} or a
   * bare password as in {@code redis://pass@host}), or {@code user:pass@host} without one.
   */
  private static final Pattern URL_WITH_SCHEME =
      Pattern.compile("([a-zA-Z][a-zA-Z0-9+.-]*://)([^\\s/@]*)@");

  private static final Pattern USERINFO_NO_SCHEME =
      Pattern.compile("(^|[\\s,;=(\"'\\[])([^\\s/@:,;=(\"'\\[]*):([^\\s/@,;\"']+)@");

  /** Smallest value the {@link Redactor} scrubs from free text (shorter ones would mangle text). */
  static final int MIN_SCRUBBED_LENGTH = 4;

  private Secrets() {}

  /**
   * Whether a setting with this name holds a credential. A policy's token counts ({@code
   * maxOutputTokens}, {@code defaultInputTokens}: camel case ending in {@code Tokens}) are numbers,
   * not credentials: their values are shown.
   */
  public static boolean isSecretKey(@Nullable String key) {
    return key != null && SECRET_KEY.matcher(key).matches() && !key.endsWith("Tokens");
  }

  /** The value to show for setting {@code key}: masked when a credential, else URL-redacted. */
  public static @Nullable String redactValue(String key, @Nullable String value) {
    if (value == null) {
      return null;
    }
    if (isSecretKey(key)) {
      return value.isEmpty() ? "" : MASK;
    }
    return redactUrls(value);
  }

  /** A copy of {@code env} with every credential masked (order kept). */
  public static Map<String, String> redactAll(Map<String, String> env) {
    Map<String, String> out = new LinkedHashMap<>();
    env.forEach((k, v) -> out.put(k, redactValue(k, v)));
    return out;
  }

  /** Replaces the password of every URL-like {@code user:pass@host} in {@code text}. */
  public static String redactUrls(String text) {
    if (text == null || text.indexOf('@') < 0) {
      return text;
    }
    Matcher m = URL_WITH_SCHEME.matcher(text);
    StringBuilder sb = new StringBuilder();
    while (m.find()) {
      String userinfo = m.group(2);
      int colon = userinfo.indexOf(':');
      String shown = colon < 0 ? MASK : userinfo.substring(0, colon + 1) + MASK;
      m.appendReplacement(sb, Matcher.quoteReplacement(m.group(1) + shown + "@"));
    }
    m.appendTail(sb);
    Matcher n = USERINFO_NO_SCHEME.matcher(sb.toString());
    StringBuilder out = new StringBuilder();
    while (n.find()) {
      String pass = n.group(3);
      String replacement =
          pass.equals(MASK) ? n.group() : n.group(1) + n.group(2) + ":" + MASK + "@";
      n.appendReplacement(out, Matcher.quoteReplacement(replacement));
    }
    n.appendTail(out);
    return out.toString();
  }

  /** The passwords inside URL-like values ({@code user:pass@}, {@code scheme://pass@}). */
  static List<String> urlPasswords(String value) {
    List<String> out = new ArrayList<>();
    if (value == null || value.indexOf('@') < 0) {
      return out;
    }
    Matcher m = URL_WITH_SCHEME.matcher(value);
    while (m.find()) {
      String userinfo = m.group(2);
      int colon = userinfo.indexOf(':');
      out.add(colon < 0 ? userinfo : userinfo.substring(colon + 1));
    }
    Matcher n = USERINFO_NO_SCHEME.matcher(value);
    while (n.find()) {
      out.add(n.group(3));
    }
    return out;
  }

  /** A redactor that knows the secret values of {@code settings} (e.g. the process env). */
  public static Redactor redactor(Map<String, String> settings) {
    List<String> values = new ArrayList<>();
    settings.forEach(
        (k, v) -> {
          if (v == null) {
            return;
          }
          if (isSecretKey(k)) {
            values.add(v);
            // "user:pass" (REDIS_AUTH): the password alone may show up too
            int colon = v.indexOf(':');
            if (colon >= 0) {
              values.add(v.substring(colon + 1));
            }
          }
          values.addAll(urlPasswords(v));
        });
    values.removeIf(v -> v.length() < MIN_SCRUBBED_LENGTH || v.equals(MASK));
    values.sort(Comparator.comparingInt(String::length).reversed());
    return new Redactor(List.copyOf(values));
  }

  /** Scrubs known secret values and URL passwords from free text. */
  public static final class Redactor {
    private final List<String> values;

    private Redactor(List<String> values) {
      this.values = values;
    }

    /** A redactor that knows no values (URL passwords are still masked). */
    public static Redactor none() {
      return new Redactor(List.of());
    }

    /** A redactor that knows this one's values and {@code other}'s. */
    public Redactor and(Redactor other) {
      List<String> all = new ArrayList<>(values);
      all.addAll(other.values);
      all.sort(Comparator.comparingInt(String::length).reversed());
      return new Redactor(List.copyOf(all));
    }

    /** {@link #scrub(String)} for a text that may be null (null then). */
    public @Nullable String scrubOrNull(@Nullable String text) {
      return text == null ? null : scrub(text);
    }

    public String scrub(String text) {
      if (text == null || text.isEmpty()) {
        return text;
      }
      String t = text;
      for (String v : values) {
        if (t.contains(v)) {
          t = t.replace(v, MASK);
        }
      }
      return redactUrls(t);
    }

    public List<String> scrub(List<String> texts) {
      List<String> out = new ArrayList<>(texts.size());
      for (String s : texts) {
        out.add(scrub(s));
      }
      return out;
    }
  }
}
