package io.sluice.emulator;

import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.sluice.emulator.FilterConfig.MutationRules;
import io.sluice.upstream.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Applies an ext_proc {@link HeaderMutation} the way Envoy's {@code
 * MutationUtils::applyHeaderMutations} does, each change checked by the configured {@code
 * mutation_rules} ({@code Checker::check} / {@code isAllowed} / {@code isValidValue} in {@code
 * source/extensions/filters/common/mutation_rules/mutation_rules.cc}): removals first, then sets;
 * {@code :}-headers and {@code host} can never be removed; {@code host}, {@code :authority}, {@code
 * :scheme}, {@code :method} only with {@code allow_all_routing}; {@code x-envoy*} only with {@code
 * allow_envoy}; appending to an existing {@code :}-header is refused; {@code :status} must be a
 * number ≥ 200. A refused change is skipped and counted ({@code rejected_header_mutations}), or
 * with {@code disallow_is_error} fails the whole mutation. Values come from {@code raw_value}.
 */
final class HeaderMutations {
  /** Envoy's {@code ExtraRoutingHeaders}: {@code HostLegacy}, {@code Host}, method, scheme. */
  private static final Set<String> ROUTING_HEADERS =
      Set.of("host", ":authority", ":method", ":scheme");

  private static final String ENVOY_PREFIX = "x-envoy";

  /** {@code CheckOperation}. */
  private enum Operation {
    SET,
    APPEND,
    REMOVE
  }

  private HeaderMutations() {}

  /**
   * Applies {@code mutation} to {@code headers}. Returns an error message (Envoy would answer 500)
   * or empty on success. Refused changes are skipped and counted in {@code stats} (or, with {@code
   * disallowIsError}, end the mutation with an error; changes before it stay applied, as in Envoy).
   *
   * @param ignoreContentLength true in modes where Envoy drops a server-set content-length
   * @param replacingMessage true for a {@code CONTINUE_AND_REPLACE} headers response, which may
   *     change {@code :method} whatever the rules say
   */
  static Optional<String> apply(
      HeaderMutation mutation,
      HttpHeaders headers,
      MutationRules rules,
      Stats stats,
      boolean ignoreContentLength,
      boolean replacingMessage) {
    for (String raw : mutation.getRemoveHeadersList()) {
      String name = raw.toLowerCase(Locale.ROOT);
      if (!validName(name)) {
        stats.rejectedHeaderMutations.increment();
        return Optional.of("invalid_header_name");
      }
      if (!allowed(Operation.REMOVE, name, "", rules)) {
        stats.rejectedHeaderMutations.increment();
        if (rules.disallowIsError()) {
          return Optional.of("Invalid attempt to remove " + name);
        }
        continue;
      }
      headers.remove(name);
    }
    for (HeaderValueOption option : mutation.getSetHeadersList()) {
      if (!option.hasHeader()) {
        continue;
      }
      HeaderValue hv = option.getHeader();
      String name = hv.getKey().toLowerCase(Locale.ROOT);
      if (!hv.getValue().isEmpty() && !hv.getRawValue().isEmpty()) {
        stats.rejectedHeaderMutations.increment();
        return Optional.of("both_value_and_raw_value_set");
      }
      String value = hv.getRawValue().toString(StandardCharsets.UTF_8);
      if (!validName(name) || !validValue(value)) {
        stats.rejectedHeaderMutations.increment();
        return Optional.of("invalid_header_mutation");
      }
      boolean append = option.hasAppend() && option.getAppend().getValue();
      Operation op = append && headers.contains(name) ? Operation.APPEND : Operation.SET;
      boolean ok = allowed(op, name, value, rules) || (replacingMessage && name.equals(":method"));
      if (!ok) {
        stats.rejectedHeaderMutations.increment();
        if (rules.disallowIsError()) {
          return Optional.of("Invalid attempt to modify " + name);
        }
        continue;
      }
      if (ignoreContentLength && name.equals("content-length")) {
        continue;
      }
      if (append) {
        headers.add(name, value);
      } else {
        headers.set(name, value);
      }
    }
    return Optional.empty();
  }

  /** {@code Checker::isAllowed} and, for sets, {@code Checker::isValidValue}. */
  private static boolean allowed(Operation op, String name, String value, MutationRules rules) {
    if (op == Operation.REMOVE && (name.startsWith(":") || name.equals("host"))) {
      return false; // HeaderUtility::isModifiableHeader: never removable
    }
    if (!rules.allowAllRouting() && ROUTING_HEADERS.contains(name)) {
      return false;
    }
    if (name.startsWith(":") && op == Operation.APPEND) {
      return false; // system headers take one value
    }
    if (!rules.allowEnvoy() && name.startsWith(ENVOY_PREFIX)) {
      return false;
    }
    return op == Operation.REMOVE || validSensitiveValue(name, value);
  }

  /** {@code Checker::isValidValue}: headers Envoy would misbehave on if set to junk. */
  private static boolean validSensitiveValue(String name, String value) {
    return switch (name) {
      case "host", ":authority" -> validAuthority(value);
      case ":scheme" -> value.equalsIgnoreCase("http") || value.equalsIgnoreCase("https");
      case ":status" -> validStatus(value);
      default -> true;
    };
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

  /** Envoy's {@code HeaderUtility::authorityIsValid} (nghttp2's authority character set). */
  private static boolean validAuthority(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || "-._~!$&'()*+,;=:@[]%".indexOf(c) >= 0;
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /** A number ≥ 200 (Envoy parses it as an unsigned 32-bit integer). */
  private static boolean validStatus(String value) {
    try {
      return Integer.parseInt(value) >= 200;
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
