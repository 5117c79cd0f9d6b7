//! latlab's one integration-test binary: drives the real `latlab` binary end to end.

mod clocks;
mod compare;
mod contend;
mod ctxsw;
mod cyclic;
mod fuzz;
mod load;
mod ministat;
mod noise;
mod plan;
mod store;
mod tcp;
mod trace;
mod util;
