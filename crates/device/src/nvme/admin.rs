//! The admin queue: Fabrics Connect (either queue), Property Get/Set, Disconnect; Identify,
//! Get Log Page, Set/Get Features, Async Event Request, Keep Alive.

use super::conn::{Conn, Queue};
use super::controllers::CC_EN;
use super::identify::{self, CSI_KV, MAX_QUEUE_ENTRIES, VERSION_2_0};
use super::{invalid_field, invalid_namespace, Answer};
use cerberus_proto::nvme::{connect_invalid_parameters, property, FabricsCommand, NvmeStatus, Sqe};

/// Admin opcodes answered here.
const GET_LOG_PAGE: u8 = 0x02;
const IDENTIFY: u8 = 0x06;
const SET_FEATURES: u8 = 0x09;
const GET_FEATURES: u8 = 0x0A;
const ASYNC_EVENT: u8 = 0x0C;
const KEEP_ALIVE: u8 = 0x18;

/// Features kept: number of queues, async event configuration, keep-alive timer.
const FEAT_QUEUES: u8 = 0x07;
const FEAT_ASYNC_EVENTS: u8 = 0x0B;
const FEAT_KEEP_ALIVE: u8 = 0x0F;
/// I/O queues granted (0-based, submission and completion alike).
const IO_QUEUES: u32 = 63;

/// CAP: MQES, CQR (contiguous queues), TO (20 x 500 ms), CSS bit 0 (NVM) and bit 6 (I/O
/// command sets: the KV one).
fn cap() -> u64 {
    u64::from(MAX_QUEUE_ENTRIES - 1) | 1 << 16 | 20 << 24 | (1 << 37) | (1 << 43)
}

impl Conn {
    pub(super) fn fabrics(&mut self, sqe: &Sqe, data: &[u8]) -> Answer {
        let cmd = match FabricsCommand::decode(sqe, data) {
            Ok(Some(c)) => c,
            Ok(None) => return Answer::status(NvmeStatus::error(0, 0x01)),
            Err(s) => return Answer::status(s),
        };
        match cmd {
            FabricsCommand::Connect {
                qid,
                sqsize,
                hostid,
                cntlid,
                subnqn,
                hostnqn,
                ..
            } => {
                if self.queue.is_some() || sqsize == 0 || subnqn != self.target.config.subnqn {
                    return Answer::status(connect_invalid_parameters());
                }
                let (cntlid, ctrl) = if qid == 0 {
                    // The dynamic controller model: the host asks for any controller.
                    if cntlid != 0xFFFF {
                        return Answer::status(connect_invalid_parameters());
                    }
                    match self.target.controllers.allocate(&hostnqn, hostid) {
                        Some(c) => c,
                        None => return Answer::status(connect_invalid_parameters()),
                    }
                } else {
                    let found = self.target.controllers.get(cntlid).filter(|c| {
                        let c = c.lock();
                        c.hostnqn == hostnqn && c.hostid == hostid && c.csts & 1 != 0
                    });
                    match found {
                        Some(c) if u32::from(qid) <= IO_QUEUES + 1 => (cntlid, c),
                        _ => return Answer::status(connect_invalid_parameters()),
                    }
                };
                let visible = self.target.visible(&hostnqn);
                self.queue = Some(Queue {
                    qid,
                    cntlid,
                    ctrl,
                    visible,
                    sqsize: sqsize.saturating_add(1),
                    sqhd: 0,
                });
                Answer::ok(u32::from(cntlid))
            }
            FabricsCommand::PropertyGet { offset, .. } => {
                let Some(q) = &self.queue else {
                    return Answer::status(NvmeStatus::error(0, 0x0C));
                };
                let c = q.ctrl.lock();
                let v = match offset {
                    property::CAP => cap(),
                    property::VS => u64::from(VERSION_2_0),
                    property::CC => u64::from(c.cc),
                    property::CSTS => u64::from(c.csts),
                    _ => return Answer::status(invalid_field()),
                };
                Answer::Done {
                    status: NvmeStatus::SUCCESS,
                    dw0: v as u32,
                    dw1: (v >> 32) as u32,
                    data: None,
                }
            }
            FabricsCommand::PropertySet { offset, value, .. } => {
                let Some(q) = &self.queue else {
                    return Answer::status(NvmeStatus::error(0, 0x0C));
                };
                if offset != property::CC {
                    return Answer::status(invalid_field());
                }
                q.ctrl.lock().set_cc(value as u32);
                Answer::ok(0)
            }
            FabricsCommand::Disconnect => Answer::ok(0),
        }
    }

    pub(super) fn admin(&mut self, sqe: &Sqe, _data: &[u8]) -> Answer {
        let Some(q) = &self.queue else {
            return Answer::status(NvmeStatus::error(0, 0x0C));
        };
        let ready = q.ctrl.lock().cc & CC_EN != 0;
        if !ready {
            // Commands other than Fabrics wait for CC.EN.
            return Answer::status(NvmeStatus::error(0, 0x0C));
        }
        match sqe.opcode {
            IDENTIFY => self.identify(sqe),
            GET_LOG_PAGE => self.log_page(sqe),
            SET_FEATURES | GET_FEATURES => self.features(sqe),
            ASYNC_EVENT => Answer::Hold,
            KEEP_ALIVE => Answer::ok(0),
            _ => Answer::status(NvmeStatus::error(0, 0x01)),
        }
    }

    /// The host's namespaces, read again (a namespace created since it connected).
    fn refresh_visible(&mut self) -> Vec<u32> {
        let Some(q) = self.queue.as_mut() else {
            return Vec::new();
        };
        let host = q.ctrl.lock().hostnqn.clone();
        q.visible = self.target.visible(&host);
        q.visible.clone()
    }

    fn identify(&mut self, sqe: &Sqe) -> Answer {
        let cns = (sqe.cdw(10) & 0xFF) as u8;
        let csi = (sqe.cdw(11) >> 24) as u8;
        let visible = self.refresh_visible();
        let t = &self.target;
        let nsid_ok = visible.contains(&sqe.nsid);
        let cntlid = self.queue.as_ref().map_or(0, |q| q.cntlid);
        let nn = visible.last().copied().unwrap_or(0).max(1024);
        let data = match cns {
            0x01 => identify::controller(t, cntlid, nn),
            0x02 => identify::active_list(&visible, sqe.nsid),
            0x07 if csi == CSI_KV => identify::active_list(&visible, sqe.nsid),
            0x07 => identify::active_list(&[], sqe.nsid),
            0x00 | 0x03 | 0x05 if !nsid_ok => return Answer::status(invalid_namespace()),
            0x00 => identify::namespace(t, sqe.nsid),
            0x03 => identify::descriptors(t, sqe.nsid),
            0x05 if csi == CSI_KV => identify::kv_namespace(t, sqe.nsid),
            // The NVM command set's data for a KV namespace, or an unknown set.
            0x05 => return Answer::status(invalid_field()),
            // The NVM and KV command sets' controller data hold nothing this target sets.
            0x06 if csi <= CSI_KV => vec![0u8; identify::IDENTIFY_LEN],
            0x1C => identify::command_set_profile(),
            _ => return Answer::status(invalid_field()),
        };
        Answer::data(data)
    }

    fn log_page(&mut self, sqe: &Sqe) -> Answer {
        let lid = (sqe.cdw(10) & 0xFF) as u8;
        let dwords = ((sqe.cdw(11) & 0xFFFF) << 16 | sqe.cdw(10) >> 16) as usize + 1;
        let offset = u64::from(sqe.cdw(12)) | u64::from(sqe.cdw(13)) << 32;
        let page = match lid {
            0x01 => vec![0u8; 64], // error information: no entry
            0x02 => identify::smart_log(&self.target),
            0x03 => identify::firmware_log(),
            _ => return Answer::status(NvmeStatus::error(1, 0x09)), // Invalid Log Page
        };
        let Ok(start) = usize::try_from(offset) else {
            return Answer::status(invalid_field());
        };
        if start > page.len() {
            return Answer::status(invalid_field());
        }
        // Past the page, zeros; at most 4 KiB of them, whatever NUMD a host asks for.
        let mut out = page[start..].to_vec();
        out.resize((dwords * 4).min(out.len().max(4096)), 0);
        Answer::data(out)
    }

    fn features(&mut self, sqe: &Sqe) -> Answer {
        let fid = (sqe.cdw(10) & 0xFF) as u8;
        let Some(q) = &self.queue else {
            return Answer::status(invalid_field());
        };
        let mut c = q.ctrl.lock();
        let set = sqe.opcode == SET_FEATURES;
        let value = match (fid, set) {
            // Granted: the count asked, up to IO_QUEUES, for both kinds.
            (FEAT_QUEUES, true) => {
                let v = sqe.cdw(11);
                let n = (v & 0xFFFF).max(v >> 16).min(IO_QUEUES);
                n | n << 16
            }
            (FEAT_QUEUES, false) => *c
                .features
                .get(&fid)
                .unwrap_or(&(IO_QUEUES << 16 | IO_QUEUES)),
            (FEAT_ASYNC_EVENTS | FEAT_KEEP_ALIVE, true) => sqe.cdw(11),
            (FEAT_ASYNC_EVENTS | FEAT_KEEP_ALIVE, false) => *c.features.get(&fid).unwrap_or(&0),
            _ => return Answer::status(invalid_field()),
        };
        if set {
            c.features.insert(fid, value);
        }
        Answer::ok(value)
    }
}
