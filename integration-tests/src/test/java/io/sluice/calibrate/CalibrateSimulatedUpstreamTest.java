package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code sluice calibrate} against the simulated provider over loopback HTTP: {@code K} batch
 * slots, about 190 ms of prefill for the mix's 200-token prompt (the provider counts about 230), 4
 * output tokens 40 ms apart (a request alone takes about 310 ms). Throughput flattens at K and TTFT
 * grows as active/K beyond. Slow per token so that the CPU this test and a busy machine take (2
 * shared cores) stay small against the modelled times; short steps (40 requests, 2 s) and 2
 * refinement points per interval keep each run under 30 s.
 */
class CalibrateSimulatedUpstreamTest {
  private static final String MIX = "requests:\n  - {weight: 1, promptTokens: 200, maxTokens: 4}\n";

  @TempDir Path dir;
  private SimulatedLlmUpstream llm;

  @AfterEach
  void tearDown() {
    if (llm != null) {
      llm.close();
    }
  }

  private String serve(int slots) throws Exception {
    llm =
        SimulatedLlmUpstream.create(
            new SimulatedLlmUpstream.Settings(
                slots, Duration.ofNanos(800_000), Duration.ofMillis(40), 4, 4096, 4));
    return "http://127.0.0.1:" + llm.serve(0) + "/v1/chat/completions";
  }

  private Calibrator.Options options(String url, Path out) {
    return new Calibrator.Options(
        new Target(URI.create(url), List.of(new Target.Header("authorization", "Bearer sk-test"))),
        "sim",
        Mix.parse(MIX),
        1,
        32,
        2.0,
        2,
        40,
        Duration.ofSeconds(2),
        Duration.ofSeconds(60),
        out,
        new Proposal.Names("sim", "interactive", 1.0, 1.0),
        1);
  }

  @Test
  void eightSlots_kneeWithin15Percent_chartAndAValidStaticSnippet() throws Exception {
    String url = serve(8);
    StringWriter text = new StringWriter();
    Path out = dir.resolve("out");

    Calibrator.Result r = Calibrator.run(options(url, out), new PrintWriter(text, true));

    String printed = text.toString();
    System.out.println(printed); // target/surefire-reports/<this class>-output.txt
    assertThat(r.exitCode()).as(printed).isZero();
    assertThat(r.analysis().kneeConcurrency()).as(printed).isBetween(7, 9); // 8 ± 15 %
    assertThat(r.analysis().ceiling()).as(printed).isZero();
    assertThat(r.timeUp()).isFalse();
    assertThat(printed)
        .contains("ceiling: none")
        .contains("<- knee")
        .contains("headers: authorization (values not shown)")
        .doesNotContain("sk-test");
    Path png = out.resolve("calibrate.png");
    assertThat(png).exists();
    assertThat(Files.size(png)).isGreaterThan(1000);
    // the simulated provider reports usage: the steps' prompt sizes are the ones it counted
    StepResult knee = r.analysis().knee();
    assertThat(knee.meanPromptTokens()).isBetween(200.0, 260.0);
    assertThat(knee.meanOutputTokens()).isEqualTo(4.0);

    SluiceConfig c = ConfigLoader.load(out.resolve("pool-static.yaml"));
    Proposal p = r.proposal();
    assertThat(c.pools().get("sim").maxRequests())
        .isEqualTo(p.staticRequests())
        .isEqualTo((int) Math.floor(0.8 * r.analysis().kneeConcurrency()));
    assertThat(c.pools().get("sim").capacityWorkUnits())
        .isEqualTo(p.staticRequests() * p.workPerRequest());
    assertThat(c.classes().get("interactive").maxQueueItems()).isEqualTo(p.staticRequests());
    assertThat(Files.readString(out.resolve("pool-adaptive.yaml")))
        .contains("    adaptive:\n      enabled: true\n")
        .contains("    maxRequests: " + r.analysis().kneeConcurrency() + " ");
    assertThat(Files.readAllLines(out.resolve("steps.csv")))
        .hasSize(r.analysis().steps().size() + 1);
  }

  @Test
  void providerCeiling_isReported_andTheKneeStaysBelowIt() throws Exception {
    String url = serve(16);
    llm.concurrencyCeiling(6, 429, Duration.ofSeconds(1));
    Path mix = dir.resolve("mix.yaml");
    Files.writeString(mix, MIX);
    StringWriter text = new StringWriter();
    CommandLine cl = new CommandLine(new io.sluice.bootstrap.Main());
    cl.setOut(new PrintWriter(text, true));
    cl.setErr(new PrintWriter(text, true));

    int exit =
        cl.execute(
            "calibrate",
            "--target",
            url,
            "--mix",
            mix.toString(),
            "--requests-per-step",
            "40",
            "--max-concurrency",
            "32",
            "--step-time",
            "2s",
            "--time-limit",
            "60s",
            "--out",
            dir.resolve("out").toString(),
            "--pool",
            "sim");

    String printed = text.toString();
    System.out.println(printed);
    assertThat(exit).as(printed).isZero();
    assertThat(printed)
        .contains(
            "ceiling: 429/503 from 7 concurrent requests (none at 6): the endpoint limits"
                + " concurrency to about 6")
        .containsPattern("knee: [56] concurrent requests")
        .contains("capped below the ceiling");
    ConfigLoader.load(dir.resolve("out/pool-static.yaml"));
    assertThat(dir.resolve("out/calibrate.png")).exists();
  }
}
