package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.RefusalDetail;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What the check that refused tells the client besides its reason ({@link RefusalDetail}: a spent
 * budget's name and period end) reaches the ImmediateResponse: its headers beside {@code
 * x-sluice-reason}, its fields in the JSON {@code error} beside {@code retryable: false}; a refusal
 * without one is as before.
 */
class RefusalDetailAnswerTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final AnswerEncoder.DecisionFields FIELDS =
      new AnswerEncoder.DecisionFields(
          true,
          "acme",
          "pro",
          "interactive",
          "gpu",
          "chat",
          "reject",
          "budget_exhausted",
          false,
          0,
          0,
          0,
          null,
          null,
          new byte[0]);

  private record Detail(Map<String, String> headers, Map<String, String> fields)
      implements RefusalDetail {}

  private static ImmediateResponse reject(RefusalDetail d, boolean grpc) {
    return Responses.reject(
            new AnswerEncoder.Entries(),
            Reason.BUDGET_EXHAUSTED,
            402,
            0,
            -1,
            "budget 'daily' (tenant) is spent for this period",
            FIELDS,
            grpc,
            null,
            d)
        .message()
        .getImmediateResponse();
  }

  private static Map<String, String> headers(ImmediateResponse r) {
    Map<String, String> h = new LinkedHashMap<>();
    for (HeaderValueOption o : r.getHeaders().getSetHeadersList()) {
      h.put(o.getHeader().getKey(), o.getHeader().getRawValue().toStringUtf8());
    }
    return h;
  }

  @Test
  void aBudgetRefusal_carriesThePeriodsEnd_asAHeaderAndABodyField() throws Exception {
    Map<String, String> hs = new LinkedHashMap<>();
    hs.put("x-sluice-budget", "daily");
    hs.put("x-sluice-budget-reset", "2026-03-30T00:00:00+02:00");
    Map<String, String> fs = new LinkedHashMap<>();
    fs.put("budget", "daily");
    fs.put("period_end", "2026-03-30T00:00:00+02:00");
    ImmediateResponse r = reject(new Detail(hs, fs), false);

    assertThat(r.getStatus().getCodeValue()).isEqualTo(402);
    assertThat(headers(r))
        .containsEntry("x-sluice-reason", "budget_exhausted")
        .containsEntry("x-should-retry", "false")
        .containsEntry("x-sluice-budget", "daily")
        .containsEntry("x-sluice-budget-reset", "2026-03-30T00:00:00+02:00")
        .doesNotContainKey("retry-after");
    JsonNode error = JSON.readTree(r.getBody().toByteArray()).path("error");
    assertThat(error.path("code").asText()).isEqualTo("budget_exhausted");
    assertThat(error.path("type").asText()).isEqualTo("insufficient_quota");
    assertThat(error.path("retryable").asBoolean(true)).isFalse();
    assertThat(error.path("budget").asText()).isEqualTo("daily");
    assertThat(error.path("period_end").asText()).isEqualTo("2026-03-30T00:00:00+02:00");

    // gRPC: the headers (read as trailers) carry it as well
    assertThat(headers(reject(new Detail(hs, fs), true)))
        .containsEntry("x-sluice-budget-reset", "2026-03-30T00:00:00+02:00");
  }

  @Test
  void noDetail_theRefusalIsAsBefore() throws Exception {
    ImmediateResponse r = reject(null, false);
    assertThat(headers(r)).containsOnlyKeys("content-type", "x-sluice-reason", "x-should-retry");
    JsonNode error = JSON.readTree(r.getBody().toByteArray()).path("error");
    assertThat(error.has("period_end")).isFalse();
    assertThat(error.has("budget")).isFalse();
  }
}
