@NullMarked
package io.sluice.core.policy;

import org.jspecify.annotations.NullMarked;
