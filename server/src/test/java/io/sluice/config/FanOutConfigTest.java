package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.WorkflowPolicy;
import io.sluice.routing.RequestResolver;
import io.sluice.routing.ResolvedRequest;
import io.sluice.routing.SignalRequest;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code pools.<name>.fanout}, {@code pools.<name>.workflow} and the {@code fanout} / {@code
 * workflow} signals: validation naming the field, the effective config's round trip, the work a
 * request's fan-out adds, and how the signals are read.
 */
class FanOutConfigTest {
  private static final String POLICY =
      """
      pools:
        gpu:
          capacity: 100000
          fanout: {perTool: 50, toolChoiceRequired: 400, parallelToolCalls: 300, perDeclaredCall: 1000}
          workflow: {maxRequests: 8, maxWork: 40000}
        cpu: {capacity: 1000}
      classes: {interactive: {reservedShare: 1.0}}
      signals:
        fanout: [{metadata: x-sluice-fanout}]
        workflow: [{metadata: x-sluice-workflow}]
      unmatched: {action: admit, pool: gpu, class: interactive}
      """;

  @Test
  void parsed_andDefaultsAreOff() {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    PoolPolicy gpu = c.pools().get("gpu");
    assertThat(gpu.fanout()).isEqualTo(new FanOutPolicy(50, 400, 300, 1000));
    assertThat(gpu.workflow()).isEqualTo(new WorkflowPolicy(8, 40000));
    assertThat(c.pools().get("cpu").fanout()).isEqualTo(FanOutPolicy.NONE);
    assertThat(c.pools().get("cpu").workflow()).isEqualTo(WorkflowPolicy.OFF);
    assertThat(c.pools().get("cpu").workflow().enabled()).isFalse();
  }

  @Test
  void badValues_nameTheFieldAndTheExpectedValue() {
    String yaml =
        """
        pools:
          gpu:
            capacity: 1000
            fanout: {perTool: -1, toolChoiceRequired: "many", parallelToolCalls: 1.5, perCall: 3}
            workflow: {maxRequests: -2, maxWork: x, maxTokens: 1}
        classes: {interactive: {}}
        """;
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.errors())
                    .contains(
                        "pools.gpu.fanout.perTool: -1 (expected: an integer in 0..1099511627776)",
                        "pools.gpu.fanout.toolChoiceRequired: \"many\" (expected: an integer in"
                            + " 0..1099511627776)",
                        "pools.gpu.fanout.parallelToolCalls: 1.5 (expected: an integer in"
                            + " 0..1099511627776)",
                        "pools.gpu.workflow.maxRequests: -2 (expected: an integer in 0..10000000)",
                        "pools.gpu.workflow.maxWork: \"x\" (expected: an integer in"
                            + " 0..2305843009213693951)")
                    .anySatisfy(err -> assertThat(err).contains("pools.gpu.fanout.perCall"))
                    .anySatisfy(err -> assertThat(err).contains("pools.gpu.workflow.maxTokens")));
  }

  @Test
  void effectiveConfig_showsFanOutAndWorkflow_andLoadsBackTheSame() {
    SluiceConfig c = ConfigLoader.parse(POLICY);
    var tree = ConfigWriter.tree(c);
    assertThat(tree.at("/pools/gpu/fanout/perDeclaredCall").asLong()).isEqualTo(1000);
    assertThat(tree.at("/pools/gpu/workflow/maxRequests").asInt()).isEqualTo(8);
    assertThat(tree.at("/pools/cpu/fanout/perTool").asLong()).isZero();
    assertThat(tree.at("/signals/workflow/0/metadata").asText()).isEqualTo("x-sluice-workflow");
    SluiceConfig back = ConfigLoader.parse(tree.toString());
    assertThat(back.pools()).isEqualTo(c.pools());
    assertThat(back.signals()).isEqualTo(c.signals());
  }

  /** Input + output reserve + fan-out, each source priced by the pool. */
  @Test
  void workUnits_addEverySource() {
    PoolPolicy gpu = ConfigLoader.parse(POLICY).pools().get("gpu");
    FanOutPolicy f = gpu.fanout();

    assertThat(f.workUnits(FanOut.NONE, 0)).isZero();
    assertThat(f.workUnits(new FanOut(3, false, false), 0)).isEqualTo(150);
    assertThat(f.workUnits(new FanOut(3, true, true), 2)).isEqualTo(150 + 400 + 300 + 2000);
    assertThat(f.declared(5000)).as("capped").isEqualTo(1000L * FanOutPolicy.MAX_DECLARED_CALLS);
    assertThat(f.declared(-3)).isZero();
    assertThat(gpu.workUnits(100, 200, f.workUnits(new FanOut(1, false, true), 0)))
        .isEqualTo(300 + 50 + 300);
    assertThat(
            new FanOutPolicy(FanOutPolicy.MAX_WORK, 0, 0, 0)
                .workUnits(new FanOut(Integer.MAX_VALUE, false, false), 0))
        .as("saturates, never negative")
        .isPositive();
  }

  /** The {@code fanout} signal: a non-negative integer, capped; anything else is ignored. */
  @ParameterizedTest
  @CsvSource({
    "3, 3",
    "' 7 ', 7",
    "0, 0",
    "-4, 0",
    "abc, 0",
    "2.5, 0",
    "1024, 1024",
    "1025, 1024",
    "99999999999999999999999, 1024",
    "9223372036854775807, 1024",
  })
  void fanoutSignal_parsedCappedOrIgnored(String value, int expected) {
    RequestResolver r = new RequestResolver(ConfigLoader.parse(POLICY));
    SignalRequest req = new SignalRequest();
    req.metadata.put("x-sluice-fanout", value);

    assertThat(r.resolve(req, 0).fanout()).isEqualTo(expected);
    assertThat(r.resolve(req, 0).subject(0).fanout()).isEqualTo(expected);
  }

  @Test
  void workflowSignal_readFromItsSourceOnly_andLengthCapped() {
    RequestResolver r = new RequestResolver(ConfigLoader.parse(POLICY));
    SignalRequest req = new SignalRequest();
    req.headers.put("x-sluice-workflow", "forged");
    assertThat(r.resolve(req, 0).workflow()).isNull();

    req.metadata.put("x-sluice-workflow", "run-" + "9".repeat(500));
    ResolvedRequest rr = r.resolve(req, 0);
    assertThat(rr.workflow()).hasSize(128).startsWith("run-9");
    assertThat(rr.subject(0).workflow()).isEqualTo(rr.workflow());
  }

  /** The embedded default never reads fanout or workflow from a client header. */
  @Test
  void embeddedDefault_readsFanoutAndWorkflowFromMetadataOnly() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    for (Signal s : List.of(Signal.FANOUT, Signal.WORKFLOW)) {
      assertThat(c.signals().get(s)).as(s.key()).isNotEmpty();
      assertThat(c.signals().get(s)).as(s.key()).allMatch(src -> src instanceof Source.Metadata);
    }
    RequestResolver r = new RequestResolver(c);
    SignalRequest forged = new SignalRequest();
    forged.headers.put("x-sluice-fanout", "1000");
    forged.headers.put("x-sluice-workflow", "victim");
    ResolvedRequest rr = r.resolve(forged, 0);
    assertThat(rr.fanout()).isZero();
    assertThat(rr.workflow()).isNull();
  }

  /** A header source of either signal is trusted input: validate warns unless Envoy strips it. */
  @Test
  void headerSources_warned() {
    SluiceConfig c =
        ConfigLoader.parse(
            POLICY.replace(
                "fanout: [{metadata: x-sluice-fanout}]", "fanout: [{header: x-fanout}]"));
    assertThat(TrustedHeaders.warnings(c))
        .anySatisfy(w -> assertThat(w).startsWith("signals.fanout[0]: header x-fanout"));
  }
}
