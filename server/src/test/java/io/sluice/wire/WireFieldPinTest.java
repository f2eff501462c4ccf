package io.sluice.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.GrpcStatus;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Pins, per message each hand-written wire codec reads or writes, the full set of field numbers of
 * the message (from the protobuf descriptors of io.envoyproxy.controlplane:api and protobuf-java)
 * against the fields the codec knows: reads or writes, deliberately skips, or hands to
 * protobuf-java. An Envoy API upgrade that adds (or renumbers, renames, removes) a field of one of
 * these messages fails here, naming the message, the field and the codec, so the codec is reviewed
 * before it silently drops the new field (a reader) or omits it (a writer).
 *
 * <p>The codecs: {@code extproc.Inbound} (ProcessingRequest reader), {@code rls.RlsRequestReader}
 * (RateLimitRequest reader), {@code extproc.AnswerEncoder} (ProcessingResponse writer) and {@code
 * rls.RlsAnswer} (RateLimitResponse writer), on {@link ProtoReader} and {@link ProtoWriter}.
 */
class WireFieldPinTest {
  private static final String INBOUND = "extproc.Inbound (ProcessingRequest wire reader)";
  private static final String RLS_READER = "rls.RlsRequestReader (RateLimitRequest wire reader)";
  private static final String ANSWER_ENCODER = "extproc.AnswerEncoder (ProcessingResponse writer)";
  private static final String RLS_ANSWER = "rls.RlsAnswer (RateLimitResponse writer)";

  /** One message as one codec knows it: field number to "name: what the codec does with it". */
  record Pin(String codec, Descriptor message, Map<Integer, String> known) {}

  private static Pin pin(String codec, Descriptor message, String... numberNameUse) {
    Map<Integer, String> known = new LinkedHashMap<>();
    for (String s : numberNameUse) {
      int space = s.indexOf(' ');
      known.put(Integer.parseInt(s.substring(0, space)), s.substring(space + 1));
    }
    return new Pin(codec, message, known);
  }

  static List<Pin> pins() {
    return List.of(
        // --- Inbound: reads request/response headers and bodies from the wire, else protobuf-java
        pin(
            INBOUND,
            ProcessingRequest.getDescriptor(),
            "2 request_headers: read",
            "3 response_headers: read",
            "4 request_body: read",
            "5 response_body: read",
            "6 request_trailers: whole message parsed by protobuf-java",
            "7 response_trailers: whole message parsed by protobuf-java",
            "8 metadata_context: checked by protobuf-java, read on demand",
            "9 attributes: checked by protobuf-java, read on demand",
            "10 observability_mode: skipped (Sluice answers every message)",
            "11 protocol_config: read"),
        pin(
            INBOUND,
            HttpHeaders.getDescriptor(),
            "1 headers: read",
            "2 attributes: whole message parsed by protobuf-java (deprecated)",
            "3 end_of_stream: read"),
        pin(INBOUND, HttpBody.getDescriptor(), "1 body: read", "2 end_of_stream: read"),
        pin(INBOUND, HeaderMap.getDescriptor(), "1 headers: read"),
        pin(
            INBOUND,
            HeaderValue.getDescriptor(),
            "1 key: read (ASCII; else protobuf-java)",
            "2 value: read (ASCII; else protobuf-java)",
            "3 raw_value: read"),
        pin(
            INBOUND,
            ProtocolConfiguration.getDescriptor(),
            "1 request_body_mode: read",
            "2 response_body_mode: read",
            "3 send_body_without_waiting_for_header_response: skipped (Sluice does not use it)"),
        // --- RlsRequestReader
        pin(
            RLS_READER,
            RateLimitRequest.getDescriptor(),
            "1 domain: read (ASCII; else protobuf-java)",
            "2 descriptors: read",
            "3 hits_addend: read"),
        pin(
            RLS_READER,
            RateLimitDescriptor.getDescriptor(),
            "1 entries: read",
            "2 limit: whole request parsed by protobuf-java",
            "3 hits_addend: whole request parsed by protobuf-java"),
        pin(
            RLS_READER,
            RateLimitDescriptor.Entry.getDescriptor(),
            "1 key: read (ASCII; else protobuf-java)",
            "2 value: read (ASCII; else protobuf-java)"),
        // --- AnswerEncoder: writes admit (headers/body response) and refusal answers
        pin(
            ANSWER_ENCODER,
            ProcessingResponse.getDescriptor(),
            "1 request_headers: written (admit at headers)",
            "2 response_headers: not written here (protobuf-java builders)",
            "3 request_body: written (admit at body)",
            "4 response_body: not written here (protobuf-java builders)",
            "5 request_trailers: never sent",
            "6 response_trailers: never sent",
            "7 immediate_response: written (refusals)",
            "8 dynamic_metadata: written",
            "9 mode_override: not written here (protobuf-java builders)",
            "10 override_message_timeout: not written here (Responses.hold)"),
        pin(ANSWER_ENCODER, HeadersResponse.getDescriptor(), "1 response: written"),
        pin(ANSWER_ENCODER, BodyResponse.getDescriptor(), "1 response: written"),
        pin(
            ANSWER_ENCODER,
            CommonResponse.getDescriptor(),
            "1 status: not written (CONTINUE, the proto3 default)",
            "2 header_mutation: written",
            "3 body_mutation: never set by Sluice",
            "4 trailers: never set by Sluice",
            "5 clear_route_cache: never set by Sluice"),
        pin(
            ANSWER_ENCODER,
            HeaderMutation.getDescriptor(),
            "1 set_headers: written",
            "2 remove_headers: never set by Sluice"),
        pin(
            ANSWER_ENCODER,
            HeaderValueOption.getDescriptor(),
            "1 header: written",
            "2 append: not written (deprecated; append_action instead)",
            "3 append_action: written",
            "4 keep_empty_value: not written (default)"),
        pin(
            ANSWER_ENCODER,
            HeaderValue.getDescriptor(),
            "1 key: written",
            "2 value: not written (raw_value instead)",
            "3 raw_value: written"),
        pin(
            ANSWER_ENCODER,
            ImmediateResponse.getDescriptor(),
            "1 status: written",
            "2 headers: written",
            "3 body: written",
            "4 grpc_status: written (gRPC refusals)",
            "5 details: written"),
        pin(ANSWER_ENCODER, HttpStatus.getDescriptor(), "1 code: written"),
        pin(ANSWER_ENCODER, GrpcStatus.getDescriptor(), "1 status: written"),
        pin(ANSWER_ENCODER, com.google.protobuf.Struct.getDescriptor(), "1 fields: written"),
        pin(
            ANSWER_ENCODER,
            com.google.protobuf.Value.getDescriptor(),
            "1 null_value: never written",
            "2 number_value: written",
            "3 string_value: written",
            "4 bool_value: never written",
            "5 struct_value: written",
            "6 list_value: never written"),
        // --- RlsAnswer
        pin(
            RLS_ANSWER,
            RateLimitResponse.getDescriptor(),
            "1 overall_code: written",
            "2 statuses: written",
            "3 response_headers_to_add: written",
            "4 request_headers_to_add: never set by Sluice",
            "5 raw_body: never set by Sluice",
            "6 dynamic_metadata: never set by Sluice",
            "7 quota: never set by Sluice"),
        pin(
            RLS_ANSWER,
            RateLimitResponse.DescriptorStatus.getDescriptor(),
            "1 code: written",
            "2 current_limit: written",
            "3 limit_remaining: written",
            "4 duration_until_reset: written",
            "5 quota: never set by Sluice"),
        pin(
            RLS_ANSWER,
            RateLimitResponse.RateLimit.getDescriptor(),
            "1 requests_per_unit: written",
            "2 unit: written",
            "3 name: written"),
        pin(
            RLS_ANSWER,
            HeaderValue.getDescriptor(),
            "1 key: written",
            "2 value: written",
            "3 raw_value: not written (value instead)"),
        pin(
            RLS_ANSWER,
            com.google.protobuf.Duration.getDescriptor(),
            "1 seconds: written",
            "2 nanos: not written (whole seconds)"));
  }

  @Test
  void everyFieldOfEveryCodecMessage_isKnownToItsCodec() {
    assertThat(problems(pins())).as("wire codec field pins").isEmpty();
  }

  /** What does not match between the descriptors and the pins. */
  static List<String> problems(List<Pin> pins) {
    List<String> problems = new ArrayList<>();
    for (Pin p : pins) {
      Map<Integer, FieldDescriptor> fields = new TreeMap<>();
      for (FieldDescriptor f : p.message().getFields()) {
        fields.put(f.getNumber(), f);
      }
      for (FieldDescriptor f : fields.values()) {
        String known = p.known().get(f.getNumber());
        if (known == null) {
          problems.add(
              String.format(
                  "%s field %d (%s, %s) is new to %s: decide whether the codec reads/writes it,"
                      + " skips it or leaves it to protobuf-java, then pin it in WireFieldPinTest",
                  p.message().getFullName(), f.getNumber(), f.getName(), f.getType(), p.codec()));
        } else if (!known.startsWith(f.getName() + ":")) {
          problems.add(
              String.format(
                  "%s field %d is now %s (pinned as \"%s\") in %s",
                  p.message().getFullName(), f.getNumber(), f.getName(), known, p.codec()));
        }
      }
      for (Map.Entry<Integer, String> e : p.known().entrySet()) {
        if (!fields.containsKey(e.getKey())) {
          problems.add(
              String.format(
                  "%s has no field %d any more (pinned as \"%s\" in %s)",
                  p.message().getFullName(), e.getKey(), e.getValue(), p.codec()));
        }
      }
    }
    return problems;
  }

  /** The pin fails loudly: a field the table does not know is reported by message and codec. */
  @Test
  void aFieldTheCodecDoesNotKnow_isReportedWithMessageFieldAndCodec() {
    Pin missing = pin(INBOUND, HttpBody.getDescriptor(), "1 body: read"); // end_of_stream left out

    assertThat(problems(List.of(missing)))
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("envoy.service.ext_proc.v3.HttpBody field 2 (end_of_stream, BOOL) is new to")
        .contains(INBOUND);
  }
}
