package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.NativeRequestInfo;
import io.sluice.core.estimate.NativeUsage;
import io.sluice.emulator.AiFilters;
import io.sluice.observability.NativeMetadataMetrics;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Envoy's native AI metadata read from {@code metadata_context}: typed (the {@code Any} decoded
 * field by field against the upstream protos' numbers) and untyped (the {@code Struct} projection);
 * every unusable field ignored and counted, never a failure.
 */
class NativeMetadataReaderTest {
  private static final String RI = AiFilters.REQUEST_INFO_NAMESPACE;
  private static final String TU = AiFilters.TOKEN_USAGE_NAMESPACE;

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final NativeMetadataMetrics meters = new NativeMetadataMetrics(registry, () -> 0);

  private double invalid(String kind, String field) {
    Counter c =
        registry.find(NativeMetadataMetrics.INVALID).tags("kind", kind, "field", field).counter();
    return c == null ? 0 : c.count();
  }

  private double invalidAny() {
    return registry.find(NativeMetadataMetrics.INVALID).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private static Metadata typed(AiFilters.Published p) {
    return Metadata.newBuilder().putTypedFilterMetadata(p.namespace(), p.typed()).build();
  }

  private static Metadata untyped(AiFilters.Published p) {
    return Metadata.newBuilder().putFilterMetadata(p.namespace(), p.untyped()).build();
  }

  @Test
  void requestInfo_typedAndUntyped_readTheSame() {
    AiFilters.Published p =
        AiFilters.requestInfo(
                ("{\"model\":\"gpt-4o\",\"stream\":true,\"max_completion_tokens\":700,"
                        + "\"messages\":[{},{},{}],\"tools\":[{},{}]}")
                    .getBytes(StandardCharsets.UTF_8))
            .orElseThrow();
    NativeRequestInfo want = new NativeRequestInfo("gpt-4o", true, 700, 3, 2);
    assertThat(NativeMetadataReader.requestInfo(typed(p), RI, meters)).isEqualTo(want);
    assertThat(NativeMetadataReader.requestInfo(untyped(p), RI, meters)).isEqualTo(want);
    assertThat(NativeMetadataReader.requestInfo(Metadata.getDefaultInstance(), RI, meters))
        .isNull();
    assertThat(invalidAny()).isZero();
  }

  @Test
  void tokenUsage_typedAndUntyped_readTheSame_withTheirStatus() {
    AiFilters.Published p = AiFilters.tokenUsage(1200L, 350L, 800, 1);
    NativeUsage want = new NativeUsage(1200, 350, 800, NativeUsage.Status.COMPLETE);
    assertThat(NativeMetadataReader.tokenUsage(typed(p), TU, meters)).isEqualTo(want);
    assertThat(NativeMetadataReader.tokenUsage(untyped(p), TU, meters)).isEqualTo(want);
    AiFilters.Published failed = AiFilters.tokenUsage(null, null, 0, 3);
    NativeUsage f = NativeMetadataReader.tokenUsage(typed(failed), TU, meters);
    assertThat(f).isEqualTo(new NativeUsage(-1, -1, 0, NativeUsage.Status.FAILED));
    assertThat(f.usable()).isFalse();
    assertThat(
            NativeMetadataReader.tokenUsage(typed(AiFilters.tokenUsage(5L, 6L, 0, 2)), TU, meters)
                .status())
        .isEqualTo(NativeUsage.Status.PARTIAL);
    assertThat(invalidAny()).isZero();
  }

  @Test
  void untyped_wrongTypesNegativeHugeFractional_areIgnoredAndCounted() {
    Struct s =
        Struct.newBuilder()
            .putFields("model", Value.newBuilder().setNumberValue(4).build())
            .putFields("stream", Value.newBuilder().setStringValue("yes").build())
            .putFields("max_output_tokens", Value.newBuilder().setNumberValue(-5).build())
            .putFields("message_count", Value.newBuilder().setNumberValue(1e300).build())
            .putFields("tool_count", Value.newBuilder().setNumberValue(1.5).build())
            .build();
    NativeRequestInfo info =
        NativeMetadataReader.requestInfo(
            Metadata.newBuilder().putFilterMetadata(RI, s).build(), RI, meters);
    assertThat(info).isEqualTo(NativeRequestInfo.NONE);
    for (String f :
        new String[] {"model", "stream", "max_output_tokens", "message_count", "tool_count"}) {
      assertThat(invalid("request_info", f)).as(f).isEqualTo(1);
    }
    Struct u =
        Struct.newBuilder()
            .putFields("input_tokens", Value.newBuilder().setNumberValue(Double.NaN).build())
            .putFields("output_tokens", Value.newBuilder().setNumberValue(1e12).build())
            .putFields("extraction_status", Value.newBuilder().setStringValue("GREAT").build())
            .build();
    NativeUsage n =
        NativeMetadataReader.tokenUsage(
            Metadata.newBuilder().putFilterMetadata(TU, u).build(), TU, meters);
    assertThat(n).isEqualTo(new NativeUsage(-1, -1, 0, NativeUsage.Status.FAILED));
    assertThat(invalid("token_usage", "input_tokens")).isEqualTo(1);
    assertThat(invalid("token_usage", "output_tokens")).isEqualTo(1);
    assertThat(invalid("token_usage", "extraction_status")).isEqualTo(1);
  }

  @Test
  void typed_wrongWireTypesOverBoundAndGarbage_areIgnoredAndCounted() {
    // field 4 (max_output_tokens) as a varint instead of a UInt64Value; field 5 a wrapper of 2^64-1
    byte[] bytes = {
      0x20,
      0x07, // 4: varint 7 (wrong wire type)
      0x2a,
      0x0b,
      0x08,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      (byte) 0xff,
      0x01, // 5: {1: 2^64-1}
      0x32,
      0x02,
      0x08,
      0x03, // 6: {1: 3}
    };
    Any any =
        Any.newBuilder()
            .setTypeUrl(AiFilters.REQUEST_INFO_TYPE_URL)
            .setValue(ByteString.copyFrom(bytes))
            .build();
    NativeRequestInfo info =
        NativeMetadataReader.requestInfo(
            Metadata.newBuilder().putTypedFilterMetadata(RI, any).build(), RI, meters);
    assertThat(info).isEqualTo(new NativeRequestInfo(null, null, -1, -1, 3));
    assertThat(invalid("request_info", "max_output_tokens")).isEqualTo(1);
    assertThat(invalid("request_info", "message_count")).isEqualTo(1);

    Any garbage =
        Any.newBuilder()
            .setTypeUrl(AiFilters.TOKEN_USAGE_TYPE_URL)
            .setValue(ByteString.copyFrom(new byte[] {0x1a, 0x7f, 0x08}))
            .build();
    assertThat(
            NativeMetadataReader.tokenUsage(
                Metadata.newBuilder().putTypedFilterMetadata(TU, garbage).build(), TU, meters))
        .isNull();
    assertThat(invalid("token_usage", "record")).isEqualTo(1);

    Any other = Any.newBuilder().setTypeUrl("type.googleapis.com/google.protobuf.Struct").build();
    assertThat(
            NativeMetadataReader.tokenUsage(
                Metadata.newBuilder().putTypedFilterMetadata(TU, other).build(), TU, meters))
        .isNull();
    assertThat(invalid("token_usage", "type_url")).isEqualTo(1);
  }
}
