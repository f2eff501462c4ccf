/**
 * Token estimation for admission: request-body estimates ({@link
 * io.sluice.core.estimate.TokenEstimator}) and response usage extraction ({@link
 * io.sluice.core.estimate.UsageExtractor}). Plain Java plus Jackson streaming and jtokkit; no
 * transport types. Prompt and completion text is never logged.
 */
@NullMarked
package io.sluice.core.estimate;

import org.jspecify.annotations.NullMarked;
