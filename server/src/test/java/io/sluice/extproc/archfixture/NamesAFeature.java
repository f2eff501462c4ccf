package io.sluice.extproc.archfixture;

import io.sluice.feature.retry.RetryFeature;

/** Breaks LayerRules.ONLY_BOOTSTRAP_NAMES_A_FEATURE: an adapter naming a feature module. */
public final class NamesAFeature {
  private NamesAFeature() {}

  public static Object feature() {
    return new RetryFeature();
  }
}
