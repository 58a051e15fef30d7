//! Without the `postgres` feature there is no PostgreSQL side: a type with no values standing
//! in for `flights_pg::PgSide`, so that the run compiles without it (its `Option` is `None`).

use super::flights_query::{FlightQuery, Out};
use anyhow::{bail, Result};

pub enum PgSide {}

impl PgSide {
    pub fn start_for_device() -> Result<PgSide> {
        bail!("PostgreSQL as a peer needs cerberus-paper built with the postgres feature")
    }

    pub fn load(&self, _records: &[(Vec<u8>, Vec<u8>)]) -> Result<f64> {
        match *self {}
    }

    pub fn analyze(&self) -> Result<f64> {
        match *self {}
    }

    pub fn write(&self, _ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<()> {
        match *self {}
    }

    pub fn plan(&self, _q: &FlightQuery) -> Result<String> {
        match *self {}
    }

    pub fn run(&self, _q: &FlightQuery) -> Result<Out> {
        match *self {}
    }

    pub fn settings(&self) -> String {
        match *self {}
    }
}
