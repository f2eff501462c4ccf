/**
 * The Envoy external processor: the ext_proc gRPC service ({@link
 * io.sluice.extproc.ExtProcService}), one {@link io.sluice.extproc.ExtProcStream} per HTTP request,
 * reading Envoy's messages into the admission session and encoding its decisions back as Envoy
 * answers.
 */
@NullMarked
package io.sluice.extproc;

import org.jspecify.annotations.NullMarked;
