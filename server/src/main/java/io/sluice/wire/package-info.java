@NullMarked
package io.sluice.wire;

import org.jspecify.annotations.NullMarked;
