/** Background intake as a feature module: {@link io.sluice.feature.intake.IntakeFeature}. */
@NullMarked
package io.sluice.feature.intake;

import org.jspecify.annotations.NullMarked;
