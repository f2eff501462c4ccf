package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The bench jar's command line as a new user meets it: help, no arguments, descriptions. */
class BenchCliTest {

  /** Output and exit code of one command line. */
  record Run(int code, String out, String err) {}

  static Run run(String... args) {
    CommandLine cli = BenchMain.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int code = cli.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void help_everySubcommand_printsItsUsageAndExitsZero() {
    var subcommands = BenchMain.commandLine().getSubcommands().keySet();
    assertThat(subcommands).contains("demo", "scenario", "probe", "floor", "heap", "rls");
    for (String name : subcommands) {
      for (String flag : new String[] {"--help", "-h"}) {
        Run r = run(name, flag);
        assertThat(r.code()).as(name + " " + flag + ": " + r.err()).isZero();
        assertThat(r.out()).as(name).startsWith("Usage: sluice-bench " + name);
        assertThat(r.err()).as(name).isEmpty();
      }
    }
  }

  @Test
  void noArguments_printsTheSubcommandsInsteadOfStartingTheDemo() {
    Run r = run();
    assertThat(r.code()).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(r.out()).isEmpty(); // nothing ran
    assertThat(r.err())
        .contains(
            "Missing required subcommand", "Usage: sluice-bench", "demo", "probe", "scenario");
  }

  @Test
  void usage_noDescriptionSaysNull_andScenarioListsTheScenarios() {
    assertThat(run("--help").out()).doesNotContain("null").contains("scenario", "probe");
    for (String name : BenchMain.commandLine().getSubcommands().keySet()) {
      assertThat(run(name, "--help").out()).as(name).doesNotContain("null");
    }
    assertThat(run("scenario", "--help").out())
        .contains("stepped", "classes", "noisy", "cancel", "spike", "or all");
  }

  @Test
  void version_onTheJarAndEverySubcommand() {
    assertThat(run("--version").out()).startsWith("sluice-bench ");
    assertThat(run("probe", "-V").out()).startsWith("sluice-bench ");
  }

  @Test
  void demo_chartGoesToTheOutputDirectory_notTheWorkingDirectory() {
    BenchMain.Demo demo = new BenchMain.Demo();
    new CommandLine(demo).parseArgs();
    assertThat(demo.out).isEqualTo(java.nio.file.Path.of("target/sluice-demo"));
    assertThat(demo.chart).isNull();
    new CommandLine(demo).parseArgs("--out", "/tmp/x");
    assertThat(demo.out).isEqualTo(java.nio.file.Path.of("/tmp/x"));
  }
}
