package io.sluice.bench;

import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * The floor's options of target {@code noop-answers}: capturing Sluice's answers and serving them.
 */
final class FloorAnswerOptions {
  @Option(
      names = "--capture-answers",
      description =
          "only capture the answers target sluice gives each workload into this file and exit"
              + " (what target noop-answers sends; the floor runs it before the servers start)")
  @Nullable Path captureAnswers;

  @Option(
      names = "--answers",
      description = "with --serve noop-answers: the answers to send, from --capture-answers")
  @Nullable Path answers;
}
