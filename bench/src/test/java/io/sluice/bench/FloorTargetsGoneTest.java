package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** When the floor cannot pause or resume a server's JVM, its error names the ones that ended. */
class FloorTargetsGoneTest {
  /** A child that exited with {@code code} as "sluice-baseline", beside a running "noop". */
  private static Map<String, Process> oneEnded(int code) throws Exception {
    Process ended = new ProcessBuilder("sh", "-c", "exit " + code).start();
    assertThat(ended.waitFor(10, TimeUnit.SECONDS)).isTrue();
    Map<String, Process> children = new LinkedHashMap<>();
    children.put("noop", new ProcessBuilder("sleep", "30").start());
    children.put("sluice-baseline", ended);
    return children;
  }

  private static String named(Process p, int code) {
    return "; ended: sluice-baseline (pid " + p.pid() + ", exit code " + code + ")";
  }

  @Test
  void anEndedChildIsNamedWithItsExitCode_aRunningOneIsNot() throws Exception {
    Map<String, Process> children = oneEnded(3);
    try {
      assertThat(FloorTargets.gone(children)).isEqualTo(named(children.get("sluice-baseline"), 3));
    } finally {
      children.get("noop").destroyForcibly();
    }
  }

  @Test
  void aPauseThatFails_namesTheChildThatEnded() throws Exception {
    Map<String, Process> children = oneEnded(7);
    Process ended = children.get("sluice-baseline");
    try {
      assertThatThrownBy(() -> FloorTargets.ofChildren(children).runOnly("noop"))
          .isInstanceOf(java.io.IOException.class)
          .hasMessageStartingWith("kill -STOP [" + ended.pid() + "] failed")
          .hasMessageEndingWith(named(ended, 7));
    } finally {
      children.get("noop").destroyForcibly();
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
