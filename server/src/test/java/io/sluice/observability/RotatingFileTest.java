package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.DecisionLogFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The decision log's rotating file: rolled by size and by age, at most maxFiles kept. */
class RotatingFileTest {
  @TempDir Path dir;
  private final AtomicLong now = new AtomicLong();

  @Test
  void rollsBySize_keepsAtMostMaxFiles_oldestDropped() throws Exception {
    Path p = dir.resolve("d.jsonl");
    try (RotatingFile f =
        new RotatingFile(
            new DecisionLogFile(p.toString(), 4096, Duration.ofHours(1), 2), now::get)) {
      String line = "x".repeat(1023); // 1 KiB with its newline: 4 lines a file
      for (int i = 0; i < 20; i++) {
        f.accept(i + line.substring(String.valueOf(i).length()));
      }
      assertThat(f.rolled()).isEqualTo(4);
      assertThat(Files.readAllLines(p)).hasSize(4).first().asString().startsWith("16");
      assertThat(Files.readAllLines(f.rolledPath(1))).first().asString().startsWith("12");
      assertThat(Files.readAllLines(f.rolledPath(2))).first().asString().startsWith("8");
      assertThat(f.rolledPath(3)).doesNotExist();
      assertThat(Files.size(p)).isLessThanOrEqualTo(4096);
      assertThat(f.failed()).isZero();
    }
  }

  @Test
  void rollsByAge_onTheInjectedClock() throws Exception {
    Path p = dir.resolve("d.jsonl");
    try (RotatingFile f =
        new RotatingFile(
            new DecisionLogFile(p.toString(), 1 << 20, Duration.ofMinutes(1), 3), now::get)) {
      f.accept("a");
      now.addAndGet(Duration.ofSeconds(59).toNanos());
      f.accept("b");
      assertThat(f.rolled()).isZero();
      now.addAndGet(Duration.ofSeconds(1).toNanos());
      f.accept("c");
      assertThat(f.rolled()).isEqualTo(1);
      assertThat(Files.readAllLines(f.rolledPath(1))).containsExactly("a", "b");
      assertThat(Files.readAllLines(p)).containsExactly("c");
    }
  }

  @Test
  void holder_keepsTheFileWhileTheSettingsHold_countsFailures() throws Exception {
    Path p = dir.resolve("d.jsonl");
    DecisionLogFile s = new DecisionLogFile(p.toString(), 1 << 20, Duration.ofHours(1), 3);
    try (RotatingFile.Holder h = new RotatingFile.Holder(now::get)) {
      RotatingFile a = h.file(s);
      assertThat(h.file(s)).isSameAs(a);
      assertThat(h.file(DecisionLogFile.NONE)).isNull();
      Files.createFile(dir.resolve("blocker"));
      RotatingFile bad =
          h.file(
              new DecisionLogFile(
                  dir.resolve("blocker").resolve("d.jsonl").toString(),
                  1 << 20,
                  Duration.ofHours(1),
                  3));
      bad.accept("lost");
      assertThat(h.failed()).isEqualTo(1);
    }
  }
}
