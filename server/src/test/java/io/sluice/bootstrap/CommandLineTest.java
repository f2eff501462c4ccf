package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** What a new user types first: help on every command, the version, a policy to start from. */
class CommandLineTest {
  @TempDir Path dir;

  record Run(int code, String out, String err) {}

  static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "serve", "validate", "config", "config print-default", "version"})
  void help_onEveryCommand_printsItsUsageAndExitsZero(String command) {
    for (String flag : new String[] {"--help", "-h"}) {
      String[] args = (command.isEmpty() ? flag : command + " " + flag).trim().split(" ");
      Run r = run(args);
      assertThat(r.code()).as(String.join(" ", args) + "\n" + r.err()).isZero();
      assertThat(r.out()).startsWith("Usage: sluice" + (command.isEmpty() ? "" : " " + command));
      assertThat(r.err()).isEmpty();
    }
  }

  @Test
  void helpCommand_printsASubcommandsUsage() {
    Run r = run("help", "validate");
    assertThat(r.code()).isZero();
    assertThat(r.out()).startsWith("Usage: sluice validate").contains("FILE");
  }

  @Test
  void version_printsTheVersionAndTheCommit() {
    Run r = run("version");
    assertThat(r.code()).isZero();
    // built from git: a hex commit id; from a tree without .git: "unknown"
    assertThat(r.out().trim()).matches("sluice \\S+ \\(commit ([0-9a-f]{7,40}|unknown)\\)");
    assertThat(run("--version").out()).isEqualTo(r.out());
    assertThat(run("serve", "--version").out()).isEqualTo(r.out());
  }

  @Test
  void printDefault_isTheEmbeddedFileWithItsComments_andValidates() throws Exception {
    Run r = run("config", "print-default");
    assertThat(r.code()).isZero();
    assertThat(r.out()).isEqualTo(ConfigLoader.embeddedDefaultYaml()).contains("# ");
    assertValidates(r.out());
  }

  @ParameterizedTest
  @ValueSource(strings = {"yaml", "json"})
  void printDefaultEffective_validatesWithZeroErrors(String format) throws Exception {
    Run r = run("config", "print-default", "--effective", "--format", format);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("interactive").contains("retryAfter");
    assertValidates(r.out());
    assertThat(ConfigLoader.parse(r.out()).pools())
        .isEqualTo(ConfigLoader.embeddedDefault().pools());
  }

  @Test
  void printDefault_badFormat_isAUsageError() {
    Run r = run("config", "print-default", "--effective", "--format", "xml");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("--format: xml (expected: yaml or json)");
  }

  @Test
  void configWithoutASubcommand_printsItsUsageAndFails() {
    Run r = run("config");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("print-default");
  }

  private void assertValidates(String policy) throws Exception {
    Path f = Files.createTempFile(dir, "policy", ".yaml");
    Files.writeString(f, policy);
    Run v = run("validate", f.toString());
    assertThat(v.err()).doesNotContain("error");
    assertThat(v.code()).isZero();
    assertThat(v.out()).contains(": OK (");
  }
}
