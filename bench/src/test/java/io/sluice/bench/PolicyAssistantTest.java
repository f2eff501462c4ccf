package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Workload;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.UpstreamRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The policy-assistant scenario's policy, workload and per-request figures; no run, no timing. */
class PolicyAssistantTest {

  @Test
  void policy_withoutLadder_parsesWithTheScenariosShares() {
    SluiceConfig c = ConfigLoader.parse(PolicyAssistant.policy(false));
    ClassPolicy interactive = c.classes().get("interactive");
    assertThat(interactive.rank()).isZero();
    assertThat(interactive.reservedShare()).isEqualTo(0.7);
    assertThat(interactive.reservedShare() - interactive.lendableShare())
        .isCloseTo(0.5, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(interactive.deadline()).hasSeconds(8);
    assertThat(c.classes().get("evaluation").rank()).isEqualTo(2);
    assertThat(c.classes().get("evaluation").reservedShare()).isZero();
    assertThat(c.routes())
        .singleElement()
        .extracting(SluiceConfig.RouteRule::estimateFrom)
        .isEqualTo(SluiceConfig.EstimateFrom.BODY);
    assertThat(c.pools().get("llm").maxRequests()).isEqualTo(16);
  }

  @Test
  void policy_withLadder_differsOnlyByTheInteractiveDegradeKey() {
    String without = PolicyAssistant.policy(false);
    String with = PolicyAssistant.policy(true);
    assertThat(with.replace(PolicyAssistant.LADDER, "")).isEqualTo(without);
    assertThat(with)
        .contains(
            "degrade: {waitAbove: 2s, headroomBelow: 0.2, ladder: [{concise: {maxOutputTokens:"
                + " 256,");
    SluiceConfig withLadder = ConfigLoader.parse(with);
    assertThat(withLadder.classes().get("interactive"))
        .isNotEqualTo(ConfigLoader.parse(without).classes().get("interactive"));
    assertThat(withLadder.classes().get("documents"))
        .isEqualTo(ConfigLoader.parse(without).classes().get("documents"));
  }

  @Test
  void workload_peakAboveWarmUp_sameArrivalsForTheSameSeed() {
    PolicyAssistant p = new PolicyAssistant();
    Workload w = p.workload();
    assertThat(w.phases()).hasSize(2);
    assertThat(w.phases().get(1).ratePerSecond() / w.phases().get(0).ratePerSecond())
        .isCloseTo(p.load / p.warmupLoad, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(w).isEqualTo(p.workload());
    assertThat(w.classes())
        .extracting(Workload.RequestClass::name)
        .containsExactly("interactive", "documents", "evaluation");
  }

  private static LoadGenerator.Outcome outcome(
      String cls,
      long arrival,
      long upstream,
      long end,
      String ending,
      String detail,
      boolean concise,
      List<LoadGenerator.Try> tries) {
    HttpHeaders h = concise ? HttpHeaders.of("x-sluice-degraded", "concise") : HttpHeaders.of();
    Optional<UpstreamRequest> up =
        upstream < 0
            ? Optional.empty()
            : Optional.of(
                new UpstreamRequest(
                    HttpHeaders.of(),
                    ("{\"model\":\"sim\",\"max_tokens\":" + (concise ? 256 : 1024) + "}")
                        .getBytes(StandardCharsets.UTF_8)));
    return new LoadGenerator.Outcome(
        cls,
        "acme",
        1,
        arrival,
        upstream,
        end,
        ending,
        detail,
        tries.size(),
        ending.equals("completed") ? 500 : -1,
        300,
        h,
        up,
        tries);
  }

  @Test
  void figures_goodputConciseLossesAndEvaluationAheadOfAQuestion() {
    List<LoadGenerator.Outcome> all =
        List.of(
            outcome(
                "interactive",
                1000,
                1100,
                4000,
                "completed",
                "",
                false,
                List.of(new LoadGenerator.Try(1000, 1100, 4000, 200))),
            outcome(
                "interactive",
                2000,
                2100,
                5000,
                "completed",
                "",
                true,
                List.of(new LoadGenerator.Try(2000, 2100, 5000, 200))),
            // held 3 s by Sluice, then refused: an evaluation job started at 4000 was ahead of it
            outcome(
                "interactive",
                3000,
                -1,
                6000,
                "refused",
                "queue_timeout",
                false,
                List.of(new LoadGenerator.Try(3000, -1, 6000, 503))),
            // refused at once, waiting for its retry over 7000–9000
            outcome(
                "interactive",
                6900,
                9050,
                12000,
                "completed",
                "",
                false,
                List.of(
                    new LoadGenerator.Try(6900, -1, 6950, 503),
                    new LoadGenerator.Try(9000, 9050, 12000, 200))),
            outcome(
                "evaluation",
                500,
                4000,
                9000,
                "completed",
                "",
                false,
                List.of(new LoadGenerator.Try(500, 4000, 9000, 200))),
            outcome(
                "evaluation",
                600,
                8000,
                12000,
                "completed",
                "",
                false,
                List.of(new LoadGenerator.Try(600, 8000, 12000, 200))),
            outcome("documents", 700, -1, 9000, "refused", "queue_timeout", false, List.of()));
    // held 2 s in the queue before it started at 4100 (x-sluice-queue-wait-ms): from 2100 on
    LoadGenerator.Outcome waited =
        new LoadGenerator.Outcome(
            "interactive",
            "acme",
            1,
            1000,
            4100,
            7000,
            "completed",
            "",
            1,
            2300,
            300,
            HttpHeaders.of("x-sluice-queue-wait-ms", "2000"),
            Optional.empty(),
            List.of(new LoadGenerator.Try(1000, 4100, 7000, 200)));
    assertThat(PolicyAssistantFigures.heldAt(waited, 3000)).isTrue();
    assertThat(PolicyAssistantFigures.heldAt(waited, 1500)).isFalse();
    assertThat(PolicyAssistantFigures.heldAt(all.get(0), 1050)).isFalse();
    PolicyAssistantFigures.Figures f = PolicyAssistantFigures.figures(all, 1);
    assertThat(f.offered()).isEqualTo(4);
    assertThat(f.completed()).isEqualTo(3);
    assertThat(f.goodput()).isEqualTo(0.75);
    assertThat(f.concise()).isEqualTo(1);
    assertThat(f.conciseCapped()).isEqualTo(1);
    assertThat(f.interactiveLost()).isEqualTo(Map.of("refused: queue_timeout", 1L));
    assertThat(f.evaluationAdmitted()).isEqualTo(2);
    assertThat(f.evaluationAheadOfWaitingQuestion()).isEqualTo(1);
    assertThat(f.evaluationAheadOfRetry()).isEqualTo(1);
    assertThat(f.lostQuestionsWithEvaluationStarted()).isEqualTo(1);
    assertThat(f.documentsOffered()).isEqualTo(1);
    assertThat(f.documentsCompleted()).isZero();
    assertThat(PolicyAssistantFigures.csv(all).lines()).hasSize(all.size() + 1);
  }
}
