@NullMarked
package io.sluice.core.quota;

import org.jspecify.annotations.NullMarked;
