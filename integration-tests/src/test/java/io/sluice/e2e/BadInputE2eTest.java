package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.num;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every bad input of issue 2, one test each: unparseable bodies are admitted on the byte heuristic
 * (counted by cause), max_tokens is clamped, oversize bodies get 413, unknown routes and tenants
 * follow the policy, and client headers claiming a class change nothing.
 */
@Timeout(20)
class BadInputE2eTest {
  private static final int INTERACTIVE_MAX_OUTPUT = 400;
  private static final int INTERACTIVE_DEFAULT_OUTPUT = 100;

  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private static HttpRequest chatBytes(byte[] body) {
    return HttpRequest.builder()
        .method("POST")
        .path(SluiceEnvoyHarness.CHAT)
        .header("content-type", "application/json")
        .bodyChunk(body)
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .build();
  }

  /** Admitted on the byte heuristic with the given fallback cause counted once. */
  private Struct assertAdmittedByFallback(HttpResult r, String cause) {
    assertThat(r.upstreamRequest()).as("admitted requests reach the upstream").isPresent();
    assertThat(r.upstreamRequest().orElseThrow().headers().first("x-sluice-decision"))
        .contains("admit");
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(h.counter("sluice.estimate.fallbacks", "cause", cause)).isEqualTo(1);
    assertThat(h.counter("sluice.estimate.fallbacks")).as("no other cause").isEqualTo(1);
    assertThat(num(md, "est_output_tokens")).isEqualTo(INTERACTIVE_DEFAULT_OUTPUT);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
    return md;
  }

  @Test
  void bodyNotJson_admittedByByteHeuristic_countedNotJson() {
    h = SluiceEnvoyHarness.start(Policy.base());
    String body = "model=gpt-4o&prompt=" + "hello ".repeat(100);

    HttpResult r = h.send(chat(body).build());

    Struct md = assertAdmittedByFallback(r, "not_json");
    // 4 bytes per token (estimation.bytesPerToken)
    assertThat(num(md, "est_input_tokens")).isBetween(body.length() / 8.0, body.length() / 2.0);
    assertThat(r.status()).as("the simulated provider rejects it, not Sluice").isEqualTo(400);
  }

  @Test
  void wrongTypes_messagesIsNumber_admittedByByteHeuristic_countedWrongType() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r = h.send(chat("{\"model\":\"gpt-4o\",\"messages\":3}").build());

    assertAdmittedByFallback(r, "wrong_type");
    assertThat(r.status()).isEqualTo(200);
  }

  @Test
  void wrongTypes_contentIsNumber_admittedByByteHeuristic_countedWrongType() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            chat("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":42}]}")
                .build());

    assertAdmittedByFallback(r, "wrong_type");
  }

  @Test
  void whitespaceOnlyBody_admittedByByteHeuristic_countedEmpty() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r = h.send(chat("   \n  ").build());

    assertAdmittedByFallback(r, "empty");
  }

  @Test
  void noBody_decidedAtRequestHeaders_admittedWithClassDefaultReserve() {
    h = SluiceEnvoyHarness.start(Policy.base());

    // Envoy sends request_headers with end_of_stream and no request_body message at all
    HttpResult r =
        h.send(
            HttpRequest.post(SluiceEnvoyHarness.CHAT, "")
                .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                .build());

    assertThat(r.upstreamRequest()).isPresent();
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(num(md, "est_input_tokens")).isZero();
    assertThat(num(md, "est_output_tokens")).isEqualTo(INTERACTIVE_DEFAULT_OUTPUT);
    assertThat(h.counter("sluice.decisions", "decision", "admit")).isEqualTo(1);
    assertThat(h.counter("sluice.estimate.fallbacks")).isZero();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void nonUtf8Bytes_admittedByByteHeuristic_countedNotUtf8() {
    h = SluiceEnvoyHarness.start(Policy.base());
    byte[] prefix =
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\""
            .getBytes(StandardCharsets.UTF_8);
    byte[] suffix = "\"}]}".getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[prefix.length + 4 + suffix.length];
    System.arraycopy(prefix, 0, body, 0, prefix.length);
    body[prefix.length] = (byte) 0xff;
    body[prefix.length + 1] = (byte) 0xfe;
    body[prefix.length + 2] = (byte) 0xc3; // a lone lead byte
    body[prefix.length + 3] = (byte) 0x28;
    System.arraycopy(suffix, 0, body, prefix.length + 4, suffix.length);

    HttpResult r = h.send(chatBytes(body));

    assertAdmittedByFallback(r, "not_utf8");
  }

  @Test
  void truncatedJson_admittedByByteHeuristic_countedTruncated() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            chat("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hel")
                .build());

    assertAdmittedByFallback(r, "truncated");
  }

  @Test
  void negativeMaxTokens_refusedAsTheEngineWould() {
    // vLLM and SGLang refuse max_tokens < 1 with a 400: forwarding it clamped would make Sluice's
    // reading of the body differ from the upstream's (docs/estimation.md, "One reading of a body")
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r = h.send(chat(chatBody(-5, false)).build());

    assertThat(r.status()).isEqualTo(400);
    assertThat(r.header("x-sluice-reason")).contains("invalid_request");
    assertThat(r.upstreamRequest()).isEmpty();
    h.awaitNothingInFlight();
  }

  @Test
  void absurdMaxTokens_clampedToClassCap() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            chat("{\"model\":\"gpt-4o\",\"max_tokens\":1000000000000000,\"messages\":"
                    + "[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .build());

    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(num(md, "est_output_tokens")).isEqualTo(INTERACTIVE_MAX_OUTPUT);
    assertThat(r.upstreamRequest().orElseThrow().headers().first("x-sluice-estimate").orElseThrow())
        .contains("output=" + INTERACTIVE_MAX_OUTPUT + ";");
    h.awaitNothingInFlight();
  }

  @Test
  void bodyOverMaxBodyBytes_rejected413BodyTooLarge() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base().with("limits.maxBodyBytes", "1KiB"));
    String body =
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\""
            + "x".repeat(2000)
            + "\"}]}";

    HttpResult r = h.send(chat(body).build());

    RejectE2eTest.assertRejected(r, 413, "body_too_large", "request");
    assertThat(r.header("retry-after")).isEmpty();
    assertThat(h.counter("sluice.decisions", "reason", "body_too_large")).isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isZero();
  }

  @Test
  void unknownRoute_unmatchedReject_rejected404UnknownRoute() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base().with("unmatched.action", "reject"));

    HttpResult r =
        h.send(HttpRequest.post("/v1/images/generations", "{\"prompt\":\"a cat\"}").build());

    RejectE2eTest.assertRejected(r, 404, "unknown_route", "request");
    h.awaitNothingInFlight();
  }

  @Test
  void unknownRoute_unmatchedAdmit_admittedToDefaultPoolAndClass() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(HttpRequest.post("/v1/images/generations", "{\"prompt\":\"a cat\"}").build());

    assertThat(r.status()).isEqualTo(200);
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(str(md, "pool")).isEqualTo("gpu");
    assertThat(str(md, "class")).isEqualTo("batch");
    assertThat(str(md, "route")).isEqualTo("unmatched");
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
  }

  @Test
  void unknownTenant_tenantsUnknownAdmit_admittedWithUnknownTier() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            HttpRequest.post(SluiceEnvoyHarness.CHAT, chatBody(10, false))
                .routeGrpcInitialMetadata("x-sluice-tenant", "stranger")
                .build());

    assertThat(r.status()).isEqualTo(200);
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(str(md, "tenant")).isEqualTo("stranger");
    assertThat(str(md, "tier")).isEqualTo("free");
    assertThat(h.counter("sluice.decisions", "tier", "free", "decision", "admit")).isEqualTo(1);
  }

  @Test
  void unknownTenant_tenantsUnknownReject_rejected403UnknownTenant() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base().with("tenants.unknown", "reject"));

    HttpResult r =
        h.send(
            HttpRequest.post(SluiceEnvoyHarness.CHAT, chatBody(10, false))
                .routeGrpcInitialMetadata("x-sluice-tenant", "stranger")
                .build());

    RejectE2eTest.assertRejected(r, 403, "unknown_tenant", "tenant");
    // a known tenant still gets in
    assertThat(h.send(chat(chatBody(10, false)).build()).status()).isEqualTo(200);
    h.awaitNothingInFlight();
  }

  @Test
  void clientHeadersClaimingClassOrPriority_ignored() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            HttpRequest.post(
                    "/v1/completions", "{\"model\":\"gpt-4o\",\"prompt\":\"hi\",\"max_tokens\":5}")
                .header("x-sluice-class", "interactive")
                .header("x-sluice-pool", "other")
                .header("x-sluice-tenant", "acme")
                .header("priority", "high")
                .build());

    assertThat(r.status()).isEqualTo(200);
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "class")).isEqualTo("batch");
    assertThat(str(md, "route")).isEqualTo("completions");
    assertThat(str(md, "tenant")).as("a client header is no tenant source").isNotEqualTo("acme");
    assertThat(h.counter("sluice.decisions", "class", "interactive")).isZero();
    assertThat(h.counter("sluice.decisions", "class", "batch", "decision", "admit")).isEqualTo(1);
  }

  @Test
  void trustedMetadataClass_overridesRouteClass() {
    h = SluiceEnvoyHarness.start(Policy.base());

    // the same claim through Envoy's per-route grpc_initial_metadata is trusted
    HttpResult r =
        h.send(
            HttpRequest.post(
                    "/v1/completions", "{\"model\":\"gpt-4o\",\"prompt\":\"hi\",\"max_tokens\":5}")
                .routeGrpcInitialMetadata("x-sluice-class", "interactive")
                .build());

    assertThat(str(sluiceMetadata(r), "class")).isEqualTo("interactive");
  }
}
