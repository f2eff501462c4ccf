package io.sluice.calibrate;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The endpoint a calibration run loads, and the safety rule: a load test is dangerous by default,
 * so only a loopback host ({@code localhost}, {@code 127.0.0.0/8}, {@code ::1}) is accepted unless
 * the operator names the target's host in {@code --allow-host}. An address literal is judged by its
 * spelling; {@code localhost} and {@code *.localhost} are resolved, and pass only when every
 * address they resolve to is a loopback address (the HTTP client resolves the same name through the
 * same resolver, so a spelling alone proves nothing); any other name is not loopback, whatever it
 * resolves to.
 *
 * @param uri the chat-completions (or completions) URL, {@code http} or {@code https}
 * @param headers extra request headers (e.g. authorization); their values are never printed
 */
public record Target(URI uri, List<Header> headers) {

  /** One request header. {@link #toString()} shows the name only: values may be credentials. */
  public record Header(String name, String value) {
    @Override
    public String toString() {
      return name + ": (value not shown)";
    }
  }

  /** Headers the JDK HTTP client sets itself and refuses from callers. */
  private static final Set<String> RESTRICTED =
      Set.of("connection", "content-length", "expect", "host", "upgrade");

  public Target {
    headers = List.copyOf(headers);
  }

  /** Why {@code url} cannot be a target ({@code null}: it can). */
  public static @Nullable String invalidUrl(String url) {
    URI u;
    try {
      u = new URI(url);
    } catch (URISyntaxException e) {
      return "--target: "
          + url
          + " (expected: an http or https URL, e.g. http://127.0.0.1:8000/v1/chat/completions)";
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      return "--target: "
          + url
          + " (expected: an http or https URL, e.g. http://127.0.0.1:8000/v1/chat/completions)";
    }
    if (u.getHost() == null || u.getHost().isEmpty()) {
      return "--target: " + url + " (expected: a URL with a host)";
    }
    if (u.getRawUserInfo() != null) {
      return "--target: user info in the URL (expected: credentials in --header, never in the URL)";
    }
    return null;
  }

  /** The URL's host as written, without the brackets of an IPv6 literal. */
  public static String host(URI uri) {
    String h = uri.getHost() == null ? "" : uri.getHost();
    return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
  }

  /** Resolves a host name to all its addresses. */
  @FunctionalInterface
  public interface Resolver {
    InetAddress[] resolve(String host) throws UnknownHostException;
  }

  /** The system resolver, the one the JDK HTTP client uses. */
  public static final Resolver SYSTEM = InetAddress::getAllByName;

  /** {@link #isLoopback(String, Resolver)} with the system resolver. */
  public static boolean isLoopback(String host) {
    return isLoopback(host, SYSTEM);
  }

  /**
   * An IPv4 literal in 127.0.0.0/8 or {@code ::1} (by spelling, no lookup), or {@code localhost} /
   * {@code *.localhost} when every address {@code resolver} gives for it is a loopback address.
   */
  public static boolean isLoopback(String host, Resolver resolver) {
    String h = host.toLowerCase(Locale.ROOT);
    if (isLocalhostName(h)) {
      return resolvesToLoopbackOnly(h, resolver);
    }
    if (h.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
      String[] octets = h.split("\\.", -1);
      for (String o : octets) {
        if (Integer.parseInt(o) > 255) {
          return false;
        }
      }
      return Integer.parseInt(octets[0]) == 127;
    }
    if (h.contains(":") && h.matches("[0-9a-f:.]+")) {
      try {
        // an IPv6 literal: parsed without any lookup
        return InetAddress.getByName(h).isLoopbackAddress();
      } catch (UnknownHostException e) {
        return false;
      }
    }
    return false;
  }

  private static boolean isLocalhostName(String h) {
    return h.equals("localhost") || h.endsWith(".localhost");
  }

  private static boolean resolvesToLoopbackOnly(String h, Resolver resolver) {
    try {
      InetAddress[] all = resolver.resolve(h);
      if (all == null || all.length == 0) {
        return false;
      }
      for (InetAddress a : all) {
        if (!a.isLoopbackAddress()) {
          return false;
        }
      }
      return true;
    } catch (UnknownHostException | SecurityException e) {
      return false;
    }
  }

  /** {@link #refusal(URI, String, Resolver)} with the system resolver. */
  public static @Nullable String refusal(URI uri, @Nullable String allowHost) {
    return refusal(uri, allowHost, SYSTEM);
  }

  /**
   * The refusal for a non-loopback target that {@code allowHost} does not name exactly ({@code
   * null}: the target may be loaded).
   */
  public static @Nullable String refusal(URI uri, @Nullable String allowHost, Resolver resolver) {
    String host = host(uri);
    if (isLoopback(host, resolver)) {
      return null;
    }
    if (allowHost != null && allowHost.equals(host)) {
      return null;
    }
    String why =
        allowHost == null
            ? isLocalhostName(host.toLowerCase(Locale.ROOT))
                ? "it is named like a loopback host, but does not resolve to loopback addresses"
                    + " only"
                : "it is not a loopback address"
            : "--allow-host "
                + allowHost
                + " does not name it (it must equal the target's host exactly)";
    return "refusing to load-test "
        + host
        + ": "
        + why
        + ". A calibration run sends bursts of concurrent requests until the endpoint saturates;"
        + " run it against a non-production replica, and pass --allow-host "
        + host
        + " to confirm that this host is the one to load.";
  }

  /**
   * Parses {@code name: value} options; returns the headers, or throws {@link
   * IllegalArgumentException} naming the bad option (never its value).
   */
  public static List<Header> parseHeaders(List<String> options) {
    List<Header> out = new ArrayList<>();
    for (String o : options) {
      int colon = o.indexOf(':');
      String name = colon < 0 ? o.trim() : o.substring(0, colon).trim();
      if (colon <= 0 || name.isEmpty() || !name.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
        throw new IllegalArgumentException(
            "--header: "
                + (name.isEmpty() || !name.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")
                    ? "(a header)"
                    : name)
                + " (expected: 'name: value', e.g. 'authorization: Bearer ...')");
      }
      if (RESTRICTED.contains(name.toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException(
            "--header: "
                + name
                + " (expected: not one of "
                + String.join(", ", new java.util.TreeSet<>(RESTRICTED))
                + ", which the HTTP client sets itself)");
      }
      out.add(new Header(name, o.substring(colon + 1).trim()));
    }
    return out;
  }
}
