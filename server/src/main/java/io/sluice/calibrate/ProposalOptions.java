package io.sluice.calibrate;

import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * The options of {@code sluice calibrate} that name what it proposes (a picocli mixin of {@link
 * CalibrateCommand}): where the files go and the pool, class and weights they are written for.
 */
final class ProposalOptions {
  @Option(
      names = "--out",
      paramLabel = "DIR",
      description =
          "directory for calibrate.png, pool-static.yaml, pool-adaptive.yaml, steps.csv"
              + " (default: ${DEFAULT-VALUE})")
  Path out = Path.of("sluice-calibrate");

  @Option(names = "--pool", description = "name of the proposed pool (default: ${DEFAULT-VALUE})")
  String pool = "default";

  @Option(
      names = "--class",
      description = "class whose queue the proposal bounds (default: ${DEFAULT-VALUE})")
  String requestClass = "interactive";

  @Option(
      names = "--input-weight",
      description = "the pool's inputWeight (default: ${DEFAULT-VALUE})")
  double inputWeight = 1.0;

  @Option(
      names = "--output-weight",
      description = "the pool's outputWeight (default: ${DEFAULT-VALUE})")
  double outputWeight = 1.0;

  /** The names and weights the proposal is written for. */
  Proposal.Names names() {
    return new Proposal.Names(pool, requestClass, inputWeight, outputWeight);
  }

  /** The first problem with these options, or null when they are valid. */
  @Nullable String invalid() {
    if (!(inputWeight >= 0 && inputWeight <= 1000 && outputWeight >= 0 && outputWeight <= 1000)) {
      return "--input-weight/--output-weight: "
          + inputWeight
          + "/"
          + outputWeight
          + " (expected: 0..1000)";
    }
    if (!pool.matches("[A-Za-z0-9_.-]+") || !requestClass.matches("[A-Za-z0-9_.-]+")) {
      return "--pool/--class: " + pool + "/" + requestClass + " (expected: letters, digits, _ . -)";
    }
    return null;
  }
}
