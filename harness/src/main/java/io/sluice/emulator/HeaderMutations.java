package io.sluice.emulator;

import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.sluice.upstream.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;

/**
 * Applies an ext_proc {@link HeaderMutation} the way Envoy's {@code MutationUtils} does with the
 * default {@code mutation_rules}: removals first, then sets; {@code host}, {@code :authority},
 * {@code :scheme}, {@code :method} and {@code x-envoy*} are rejected (counted, not an error);
 * {@code :}-headers and {@code host} can never be removed; values come from {@code raw_value}.
 */
final class HeaderMutations {
  private HeaderMutations() {}

  /**
   * Applies {@code mutation} to {@code headers}. Returns an error message (Envoy would answer 500)
   * or empty on success. Rejected changes are skipped and counted in {@code stats}.
   *
   * @param ignoreContentLength true in modes where Envoy drops a server-set content-length
   */
  static Optional<String> apply(
      HeaderMutation mutation, HttpHeaders headers, Stats stats, boolean ignoreContentLength) {
    for (String raw : mutation.getRemoveHeadersList()) {
      String name = raw.toLowerCase(Locale.ROOT);
      if (!validName(name)) {
        return Optional.of("invalid_header_name");
      }
      if (name.startsWith(":") || name.equals("host") || isRestricted(name)) {
        stats.rejectedHeaderMutations.increment();
        continue;
      }
      headers.remove(name);
    }
    for (HeaderValueOption option : mutation.getSetHeadersList()) {
      HeaderValue hv = option.getHeader();
      String name = hv.getKey().toLowerCase(Locale.ROOT);
      if (!hv.getValue().isEmpty() && !hv.getRawValue().isEmpty()) {
        return Optional.of("both_value_and_raw_value_set");
      }
      String value = hv.getRawValue().toString(StandardCharsets.UTF_8);
      if (!validName(name) || !validValue(value)) {
        return Optional.of("invalid_header_mutation");
      }
      if (isRestricted(name)) {
        stats.rejectedHeaderMutations.increment();
        continue;
      }
      if (ignoreContentLength && name.equals("content-length")) {
        continue;
      }
      if (name.equals(":status") && !validStatus(value)) {
        stats.rejectedHeaderMutations.increment();
        continue;
      }
      boolean append = option.hasAppend() && option.getAppend().getValue();
      if (append && !name.startsWith(":")) {
        headers.add(name, value);
      } else {
        headers.set(name, value);
      }
    }
    return Optional.empty();
  }

  private static boolean isRestricted(String name) {
    return name.equals("host")
        || name.equals(":authority")
        || name.equals(":scheme")
        || name.equals(":method")
        || name.startsWith("x-envoy");
  }

  private static boolean validName(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c <= ' ' || c >= 0x7f || c == '\r' || c == '\n') {
        return false;
      }
    }
    return true;
  }

  private static boolean validValue(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\r' || c == '\n' || c == 0) {
        return false;
      }
    }
    return true;
  }

  private static boolean validStatus(String value) {
    try {
      int s = Integer.parseInt(value);
      return s >= 200 && s < 600;
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
