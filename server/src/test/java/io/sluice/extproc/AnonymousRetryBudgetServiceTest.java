package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The anonymous tenant's retry budget is per client on the wire: with the default signals (no
 * {@code signals.client} in the policy: Envoy's {@code source.address} attribute), one client
 * without a tenant that floods claimed retries spends its own budget, not another's.
 */
class AnonymousRetryBudgetServiceTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
      pools: {gpu: {capacity: 1000000}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
      signals: {tenant: [{header: x-tenant-id}]}   # no client: the default, source.address
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  /** A headers-only request; {@code retry}: an SDK's retry. The stream is ended either way. */
  private ProcessingResponse request(@Nullable String sourceAddress, String tenant, boolean retry)
      throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h =
        retry ? chat("x-stainless-retry-count", "1") : chat("x-stainless-retry-count", "0");
    if (!tenant.isEmpty()) {
      h.put("x-tenant-id", tenant);
    }
    ProcessingRequest req = headers(h, true, null, null);
    if (sourceAddress != null) {
      req =
          req.toBuilder()
              .putAttributes(
                  EnvoySignals.ATTRIBUTES_KEY,
                  Struct.newBuilder()
                      .putFields(
                          "source.address",
                          Value.newBuilder().setStringValue(sourceAddress).build())
                      .build())
              .build();
    }
    ProcessingResponse r = c.send(req);
    if (!r.hasImmediateResponse()) {
      c.halfClose();
      c.awaitClose();
    }
    return r;
  }

  private static String reason(ProcessingResponse r) {
    return r.hasImmediateResponse() ? header(r, "x-sluice-reason") : "admitted";
  }

  @Test
  void oneAnonymousClientFloodsRetries_anotherAnonymousClientsRetryIsNotRefused() throws Exception {
    // the flood: retries only (no original refills its bucket); the budget starts at 10 and lets
    // retries through while above 5, so the sixth is refused whatever the port of its connection
    for (int i = 0; i < 5; i++) {
      assertThat(reason(request("198.51.100.7:" + (40_000 + i), "", true))).isEqualTo("admitted");
    }
    ProcessingResponse flooder = request("198.51.100.7:40099", "", true);
    assertThat(reason(flooder)).isEqualTo("retry_budget");
    assertThat(flooder.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);

    // another client without a tenant: its real retry is not refused retry_budget
    assertThat(reason(request("203.0.113.9:50000", "", true)))
        .as("another anonymous client's retry")
        .isEqualTo("admitted");
    assertThat(reason(request("[2001:db8::5]:443", "", true))).isEqualTo("admitted");
    // the refusal names whose budget it was
    assertThat(flooder.getImmediateResponse().getBody().toStringUtf8())
        .contains("tenant anonymous (client 198.51.100.7) in pool gpu");
    // the flooder stays refused, also from a new connection
    assertThat(reason(request("198.51.100.7:40100", "", true))).isEqualTo("retry_budget");
  }

  @Test
  void tenantsKeepTheirOwnBucket_whateverTheirAddress_andWithoutAnAddressAnonymousIsOneBucket()
      throws Exception {
    // a tenant's bucket is the tenant's: the same tenant from two addresses is one bucket
    for (int i = 0; i < 5; i++) {
      assertThat(reason(request("198.51.100." + i + ":1000", "acme", true))).isEqualTo("admitted");
    }
    assertThat(reason(request("198.51.100.99:1000", "acme", true))).isEqualTo("retry_budget");
    // no source.address attribute (an Envoy that does not send it): the one anonymous bucket
    for (int i = 0; i < 5; i++) {
      assertThat(reason(request(null, "", true))).isEqualTo("admitted");
    }
    assertThat(reason(request(null, "", true))).isEqualTo("retry_budget");
    // ... which is not a client's
    assertThat(reason(request("203.0.113.9:50000", "", true))).isEqualTo("admitted");
  }
}
