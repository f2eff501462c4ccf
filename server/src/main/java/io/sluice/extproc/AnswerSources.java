package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.sluice.core.adapt.AnswerSource;
import org.jspecify.annotations.Nullable;

/**
 * Tells who produced the response whose headers Envoy sent on ext_proc's response path
 * (docs/envoy.md, "Local replies on the response path"): Envoy's rate-limit filter ({@code
 * x-envoy-ratelimited}), its overload manager or a breaker ({@code x-envoy-overloaded}), a Sluice
 * refusal ({@code x-sluice-reason}), another Envoy local reply (a {@code response.code_details}
 * attribute other than {@code via_upstream}, when the filter sends it in {@code
 * response_attributes}), else the upstream. A success is always the upstream's.
 */
final class AnswerSources {
  private AnswerSources() {}

  static final String CODE_DETAILS = "response.code_details";
  private static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  static AnswerSource classify(Inbound h, int status) {
    if (status < 400) {
      return AnswerSource.UPSTREAM;
    }
    if (h.header("x-envoy-ratelimited") != null) {
      return AnswerSource.ENVOY_RATELIMIT;
    }
    if (h.header("x-envoy-overloaded") != null) {
      return AnswerSource.ENVOY_OVERLOAD;
    }
    if (h.header("x-sluice-reason") != null) {
      return AnswerSource.SLUICE;
    }
    String details = codeDetails(h);
    if (details != null && !details.isEmpty() && !details.equals("via_upstream")) {
      return details.equals("request_rate_limited")
          ? AnswerSource.ENVOY_RATELIMIT
          : details.equals("overload") ? AnswerSource.ENVOY_OVERLOAD : AnswerSource.ENVOY_LOCAL;
    }
    return AnswerSource.UPSTREAM;
  }

  /** The {@code response.code_details} attribute, or null when the filter does not send it. */
  static @Nullable String codeDetails(Inbound h) {
    var m = h.message();
    Value v =
        m.getAttributesOrDefault(ATTRIBUTES_KEY, Struct.getDefaultInstance())
            .getFieldsOrDefault(CODE_DETAILS, null);
    if (v == null) {
      Struct flat = m.getAttributesOrDefault(CODE_DETAILS, null);
      v = flat == null ? null : flat.getFieldsOrDefault("", null);
    }
    return v != null && v.getKindCase() == Value.KindCase.STRING_VALUE ? v.getStringValue() : null;
  }
}
