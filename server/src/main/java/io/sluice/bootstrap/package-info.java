/**
 * The only wiring root: {@link io.sluice.bootstrap.Main} (the picocli command line), {@link
 * io.sluice.bootstrap.SluiceServer} (start, reload, stop), the process's services and each config
 * snapshot's runtime, the gRPC and admin servers, readiness and drain.
 */
@NullMarked
package io.sluice.bootstrap;

import org.jspecify.annotations.NullMarked;
