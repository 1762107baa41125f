//! KML, the write path: bootstrap from capsules/, UPSERT, UPDATE, MERGE,
//! DELETE, schema discipline and protection (RC10 §2.8–2.11, §4), and the
//! RC11 Experience Learning profile.
//! Needs the test cluster (scripts/cluster.sh start) with kip installed.

#[path = "kml/common.rs"]
mod common;

#[path = "kml/bootstrap.rs"]
mod bootstrap;
#[path = "kml/delete.rs"]
mod delete;
#[path = "kml/experience.rs"]
mod experience;
#[path = "kml/known.rs"]
mod known;
#[path = "kml/merge.rs"]
mod merge;
#[path = "kml/protection.rs"]
mod protection;
#[path = "kml/update.rs"]
mod update;
#[path = "kml/upsert.rs"]
mod upsert;
