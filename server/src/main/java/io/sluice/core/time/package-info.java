@NullMarked
package io.sluice.core.time;

import org.jspecify.annotations.NullMarked;
