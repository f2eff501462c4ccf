@org.jspecify.annotations.NullMarked
package io.sluice.core.session;
