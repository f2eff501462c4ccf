/** Agent runs' retries per tool per turn as a feature module. */
@NullMarked
package io.sluice.feature.turns;

import org.jspecify.annotations.NullMarked;
