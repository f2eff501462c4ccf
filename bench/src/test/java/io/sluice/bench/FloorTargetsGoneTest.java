package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** When the floor cannot pause or resume a server's JVM, its error names the ones that ended. */
class FloorTargetsGoneTest {
  @Test
  void anEndedChildIsNamedWithItsExitCode_aRunningOneIsNot() throws Exception {
    Process ended = new ProcessBuilder("sh", "-c", "exit 3").start();
    Process running = new ProcessBuilder("sleep", "30").start();
    try {
      assertThat(ended.waitFor(10, TimeUnit.SECONDS)).isTrue();
      Map<String, Process> children = new LinkedHashMap<>();
      children.put("noop", running);
      children.put("sluice-baseline", ended);
      assertThat(FloorTargets.gone(children))
          .isEqualTo("; ended: sluice-baseline (pid " + ended.pid() + ", exit code 3)");
    } finally {
      running.destroyForcibly();
    }
  }

  @Test
  void aPauseThatFails_namesTheChildThatEnded() throws Exception {
    Process ended = new ProcessBuilder("sh", "-c", "exit 7").start();
    Process running = new ProcessBuilder("sleep", "30").start();
    try {
      assertThat(ended.waitFor(10, TimeUnit.SECONDS)).isTrue();
      Map<String, Process> children = new LinkedHashMap<>();
      children.put("noop", running);
      children.put("sluice-baseline", ended);
      assertThatThrownBy(() -> FloorTargets.ofChildren(children).runOnly("noop"))
          .isInstanceOf(java.io.IOException.class)
          .hasMessageStartingWith("kill -STOP [" + ended.pid() + "] failed")
          .hasMessageEndingWith("; ended: sluice-baseline (pid " + ended.pid() + ", exit code 7)");
    } finally {
      running.destroyForcibly();
    }
  }

  @Test
  void allRunning_nothingIsAdded() throws Exception {
    Process running = new ProcessBuilder("sleep", "30").start();
    try {
      assertThat(FloorTargets.gone(Map.of("sluice", running))).isEmpty();
    } finally {
      running.destroyForcibly();
    }
  }
}
