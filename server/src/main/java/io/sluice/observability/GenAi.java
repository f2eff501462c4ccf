package io.sluice.observability;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.session.RequestFacts;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The OpenTelemetry GenAI semantic conventions Sluice follows, version {@value #SEMCONV_VERSION}
 * (Development status: names may change in later versions; docs/telemetry.md). Only names that
 * version defines are here; admission has its own {@code sluice.*} names ({@link
 * OtelRecorder.Sluice}).
 */
public final class GenAi {
  /** The semantic conventions version followed (and pinned by the tests' semconv artifact). */
  public static final String SEMCONV_VERSION = "1.37.0";

  public static final String SERVER_REQUEST_DURATION = "gen_ai.server.request.duration";
  public static final String SERVER_TIME_TO_FIRST_TOKEN = "gen_ai.server.time_to_first_token";
  public static final String SERVER_TIME_PER_OUTPUT_TOKEN = "gen_ai.server.time_per_output_token";
  public static final String CLIENT_TOKEN_USAGE = "gen_ai.client.token.usage";

  public static final AttributeKey<String> OPERATION_NAME =
      AttributeKey.stringKey("gen_ai.operation.name");
  public static final AttributeKey<String> PROVIDER_NAME =
      AttributeKey.stringKey("gen_ai.provider.name");
  public static final AttributeKey<String> REQUEST_MODEL =
      AttributeKey.stringKey("gen_ai.request.model");
  public static final AttributeKey<String> TOKEN_TYPE = AttributeKey.stringKey("gen_ai.token.type");
  public static final AttributeKey<Long> USAGE_INPUT_TOKENS =
      AttributeKey.longKey("gen_ai.usage.input_tokens");
  public static final AttributeKey<Long> USAGE_OUTPUT_TOKENS =
      AttributeKey.longKey("gen_ai.usage.output_tokens");

  /** {@code gen_ai.token.type} values. */
  public static final String INPUT = "input";

  public static final String OUTPUT = "output";

  /** The conventions' advised bucket boundaries, seconds. */
  static final List<Double> DURATION_BUCKETS =
      List.of(
          0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92);

  static final List<Double> TTFT_BUCKETS =
      List.of(
          0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
          10.0);

  static final List<Double> TPOT_BUCKETS =
      List.of(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5);

  static final List<Long> TOKEN_BUCKETS =
      List.of(
          1L, 4L, 16L, 64L, 256L, 1024L, 4096L, 16384L, 65536L, 262144L, 1048576L, 4194304L,
          16777216L, 67108864L);

  private GenAi() {}

  /**
   * {@code gen_ai.operation.name} of a request format: {@code chat} (chat, responses, Anthropic
   * messages), {@code text_completion}, {@code embeddings}; {@code _OTHER} when the route's format
   * is {@code auto}.
   */
  public static String operation(RequestFormat f) {
    return switch (f) {
      case OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES -> "chat";
      case OPENAI_COMPLETIONS -> "text_completion";
      case OPENAI_EMBEDDINGS -> "embeddings";
      case AUTO -> "_OTHER";
    };
  }

  /**
   * {@code gen_ai.provider.name} of a request format's API: {@code openai} or {@code anthropic}.
   */
  public static String provider(RequestFormat f) {
    return switch (f) {
      case ANTHROPIC_MESSAGES -> "anthropic";
      case AUTO -> "_OTHER";
      default -> "openai";
    };
  }

  /** The GenAI attributes of a request: operation, provider, its model when known. */
  static AttributesBuilder attributes(RequestFacts f, @Nullable String model) {
    return attributes(f.subject().format(), model);
  }

  /** The GenAI attributes of a request format's API and model (when known). */
  static AttributesBuilder attributes(RequestFormat format, @Nullable String model) {
    AttributesBuilder a =
        Attributes.builder()
            .put(OPERATION_NAME, operation(format))
            .put(PROVIDER_NAME, provider(format));
    if (model != null) {
      a.put(REQUEST_MODEL, model);
    }
    return a;
  }
}
