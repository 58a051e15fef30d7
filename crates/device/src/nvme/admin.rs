//! The admin queue: Fabrics Connect (either queue), Property Get/Set, Disconnect,
//! Authentication Send/Receive (`auth`); Identify,
//! Get Log Page, Set/Get Features, Async Event Request, Keep Alive; a discovery
//! controller's (Identify controller, the discovery log).

use super::answer::{invalid_field, invalid_namespace, Answer};
use super::conn::{Conn, Queue};
use super::controllers::{Controller, CC_EN};
use super::discovery::{self, Port};
use super::identify::{self, CSI_KV, MAX_QUEUE_ENTRIES, VERSION_2_0};
use super::queue_auth::QueueAuth;
use cerberus_proto::nvme::{
    authentication_required, connect_invalid_parameters, property, AdminCommand, FabricsCommand,
    NvmeStatus, Sqe, CONNECT_ATR, DISCOVERY_NQN,
};

/// Features kept: number of queues, async event configuration, keep-alive timer.
const FEAT_QUEUES: u8 = 0x07;
const FEAT_ASYNC_EVENTS: u8 = 0x0B;
const FEAT_KEEP_ALIVE: u8 = 0x0F;
/// Features NVMe Base 2.0 makes mandatory for an I/O controller, answered by I/O
/// controllers (SPDK's identify asks for each; they were "Invalid Field"): arbitration
/// (kept as set; no weighted round robin, so the weights change nothing), power management
/// (one power state, 0), temperature threshold (the composite sensor only: over 343 K,
/// under 0 K; no sensor reads a temperature, SMART says 0, so neither is ever crossed; not
/// settable) and error recovery (no time limit, no deallocated-block error; not settable).
const FEAT_ARBITRATION: u8 = 0x01;
const FEAT_POWER: u8 = 0x02;
const FEAT_TEMPERATURE: u8 = 0x04;
const FEAT_ERROR_RECOVERY: u8 = 0x05;
const OVER_TEMPERATURE_K: u32 = 343;
/// The discovery log page.
const LOG_DISCOVERY: u8 = 0x70;
/// I/O queues granted (0-based, submission and completion alike).
const IO_QUEUES: u32 = 63;

/// The part of a log page a Get Log Page asks for: `len` bytes from byte `offset`. Past
/// the page, zeros; at most 4 KiB of them (or the page's size), whatever NUMD a host asks
/// for.
fn page_window(page: &[u8], offset: u64, len: u64) -> Answer {
    let cap = page.len().max(4096);
    let len = usize::try_from(len).map_or(cap, |l| l.min(cap));
    match usize::try_from(offset)
        .ok()
        .and_then(|o| discovery::window(page, o, len))
    {
        Some(out) => Answer::data(out),
        None => Answer::status(invalid_field()),
    }
}

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
                kato_ms,
                ..
            } => self.connect(qid, sqsize, hostid, cntlid, &subnqn, &hostnqn, kato_ms),
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
                if !q.auth.usable() {
                    return Answer::status(authentication_required());
                }
                if offset != property::CC {
                    return Answer::status(invalid_field());
                }
                q.ctrl.lock().set_cc(value as u32);
                Answer::ok(0)
            }
            FabricsCommand::Disconnect => Answer::ok(0),
            FabricsCommand::AuthSend { secp, spsp, data } => self.auth_send(secp, spsp, &data),
            FabricsCommand::AuthReceive { secp, spsp, al } => self.auth_receive(secp, spsp, al),
        }
    }

    /// A Connect: the admin queue's makes a controller (a discovery one for the
    /// well-known NQN), an I/O queue's joins a live, enabled I/O controller of the same host.
    #[allow(clippy::too_many_arguments)]
    fn connect(
        &mut self,
        qid: u16,
        sqsize: u16,
        hostid: [u8; 16],
        cntlid: u16,
        subnqn: &str,
        hostnqn: &str,
        kato_ms: u32,
    ) -> Answer {
        let discovery = subnqn == DISCOVERY_NQN;
        if self.queue.is_some()
            || sqsize == 0
            || (subnqn != self.target.config.subnqn && !discovery)
        {
            return Answer::status(connect_invalid_parameters());
        }
        // A host with a secret authenticates this queue next; one without is refused if the
        // device requires authentication ("Connect Invalid Host").
        let Some(auth) = QueueAuth::for_host(&self.target, hostnqn, subnqn) else {
            return Answer::status(NvmeStatus::error(1, 0x84));
        };
        let atr = if auth.required() { CONNECT_ATR } else { 0 };
        let (cntlid, ctrl) = if qid == 0 {
            // The dynamic controller model: the host asks for any controller.
            if cntlid != 0xFFFF {
                return Answer::status(connect_invalid_parameters());
            }
            let c = self
                .target
                .controllers
                .allocate(hostnqn, hostid, discovery, kato_ms);
            match c {
                Some(c) => c,
                None => return Answer::status(connect_invalid_parameters()),
            }
        } else if discovery || u32::from(qid) > IO_QUEUES + 1 {
            // A discovery controller has no I/O queues.
            return Answer::status(connect_invalid_parameters());
        } else if auth.required() {
            // Joined once its host has proven itself (`join_proven`): until then the queue
            // holds a controller of its own, and is answered alike whatever id it names.
            (cntlid, Controller::detached(hostnqn, hostid))
        } else {
            match self.target.controllers.join(cntlid, hostnqn, &hostid) {
                Some(c) => (cntlid, c),
                None => return Answer::status(connect_invalid_parameters()),
            }
        };
        // An admin queue made its controller; an I/O queue with nothing to prove joined it.
        let joined = qid == 0 || !auth.required();
        if joined && qid != 0 {
            self.target.shared.metrics.io_queues_joined.inc();
        }
        let visible = self.target.visible(hostnqn);
        let (activity, traffic) = {
            let c = ctrl.lock();
            (c.activity.clone(), c.traffic.clone())
        };
        if qid == 0 {
            self.placed.release();
        }
        self.queue = Some(Queue {
            qid,
            cntlid,
            ctrl,
            visible,
            // At most MAXCMD commands at once, whatever the host's SQSIZE.
            sqsize: sqsize.saturating_add(1).min(MAX_QUEUE_ENTRIES),
            sqhd: 0,
            auth,
            activity,
            traffic,
            joined,
        });
        Answer::ok(u32::from(cntlid) | atr)
    }

    /// An I/O queue whose host has just proven itself joins the controller its Connect
    /// named, if that is one of the host's (`Controllers::join`). Whether it did (or had
    /// nothing to join): if not, the authentication fails as a wrong response does, so an
    /// id that is not the host's is answered alike whether it is live or not.
    pub(super) fn join_proven(&mut self) -> bool {
        let Some(q) = self.queue.as_mut().filter(|q| !q.joined) else {
            return true;
        };
        let (hostnqn, hostid) = {
            let c = q.ctrl.lock();
            (c.hostnqn.clone(), c.hostid)
        };
        let Some(ctrl) = self.target.controllers.join(q.cntlid, &hostnqn, &hostid) else {
            return false;
        };
        {
            let c = ctrl.lock();
            q.activity = c.activity.clone();
            q.traffic = c.traffic.clone();
        }
        q.ctrl = ctrl;
        q.joined = true;
        self.target.shared.metrics.io_queues_joined.inc();
        true
    }

    pub(super) fn admin(&mut self, sqe: &Sqe, _data: &[u8]) -> Answer {
        let Some(q) = &self.queue else {
            return Answer::status(NvmeStatus::error(0, 0x0C));
        };
        if !q.auth.usable() {
            // Until the queue's host proved its NQN (I/O queues' commands come here then too).
            return Answer::status(authentication_required());
        }
        let (ready, discovery) = {
            let c = q.ctrl.lock();
            (c.cc & CC_EN != 0, c.discovery)
        };
        if !ready {
            // Commands other than Fabrics wait for CC.EN.
            return Answer::status(NvmeStatus::error(0, 0x0C));
        }
        let cmd = match AdminCommand::decode(sqe) {
            Ok(Some(c)) => c,
            Ok(None) => return Answer::status(NvmeStatus::error(0, 0x01)),
            Err(s) => return Answer::status(s),
        };
        if discovery {
            return self.discovery_admin(cmd, sqe.cdw[1]);
        }
        match cmd {
            AdminCommand::Identify { cns, csi, nsid, .. } => self.identify(cns, csi, nsid),
            AdminCommand::GetLogPage { lid, offset, len } => self.log_page(lid, offset, len),
            AdminCommand::SetFeatures { fid, value } => self.features(fid, Some(value), value),
            AdminCommand::GetFeatures { fid } => self.features(fid, None, sqe.cdw[1]),
            AdminCommand::AsyncEventRequest => Answer::Hold,
            AdminCommand::KeepAlive => Answer::ok(0),
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

    fn identify(&mut self, cns: u8, csi: u8, nsid: u32) -> Answer {
        let visible = self.refresh_visible();
        let t = &self.target;
        let nsid_ok = visible.contains(&nsid);
        let cntlid = self.queue.as_ref().map_or(0, |q| q.cntlid);
        let nn = visible.last().copied().unwrap_or(0).max(1024);
        let data = match cns {
            0x01 => identify::controller(t, cntlid, nn, false),
            0x02 => identify::active_list(&visible, nsid),
            0x07 if csi == CSI_KV => identify::active_list(&visible, nsid),
            0x07 => identify::active_list(&[], nsid),
            0x00 | 0x03 | 0x05 if !nsid_ok => return Answer::status(invalid_namespace()),
            0x00 => identify::namespace(t, nsid),
            0x03 => identify::descriptors(t, nsid),
            0x05 if csi == CSI_KV => identify::kv_namespace(t, nsid),
            // The NVM command set's data for a KV namespace, or an unknown set.
            0x05 => return Answer::status(invalid_field()),
            // The NVM and KV command sets' controller data hold nothing this target sets.
            0x06 if csi <= CSI_KV => vec![0u8; identify::IDENTIFY_LEN],
            0x1C => identify::command_set_profile(),
            _ => return Answer::status(invalid_field()),
        };
        Answer::data(data)
    }

    /// A discovery controller's admin commands: Identify controller, the discovery log,
    /// features, events and Keep Alive; nothing about namespaces.
    fn discovery_admin(&mut self, cmd: AdminCommand, cdw11: u32) -> Answer {
        let cntlid = self.queue.as_ref().map_or(0, |q| q.cntlid);
        match cmd {
            AdminCommand::Identify { cns: 0x01, .. } => {
                Answer::data(identify::controller(&self.target, cntlid, 0, true))
            }
            AdminCommand::Identify { .. } => Answer::status(invalid_field()),
            AdminCommand::GetLogPage {
                lid: LOG_DISCOVERY,
                offset,
                len,
            } => page_window(&self.discovery_log(), offset, len),
            AdminCommand::GetLogPage { .. } => Answer::status(NvmeStatus::error(1, 0x09)),
            AdminCommand::SetFeatures { fid, value } => self.features(fid, Some(value), value),
            AdminCommand::GetFeatures { fid } => self.features(fid, None, cdw11),
            AdminCommand::AsyncEventRequest => Answer::Hold,
            AdminCommand::KeepAlive => Answer::ok(0),
        }
    }

    /// The discovery log for this host: our subsystem at the address it reached us on,
    /// if the settings grant it anything; else no record.
    fn discovery_log(&self) -> Vec<u8> {
        let host = self
            .queue
            .as_ref()
            .map(|q| q.ctrl.lock().hostnqn.clone())
            .unwrap_or_default();
        let granted = self.target.config.hosts.contains_key(&host);
        let ports: Vec<Port<'_>> = match self.local_addr() {
            Some(addr) if granted => vec![Port {
                subnqn: &self.target.config.subnqn,
                addr,
                asqsz: MAX_QUEUE_ENTRIES,
            }],
            _ => Vec::new(),
        };
        discovery::log_page(&ports)
    }

    fn log_page(&mut self, lid: u8, offset: u64, len: u64) -> Answer {
        let page = match lid {
            0x01 => vec![0u8; 64], // error information: no entry
            0x02 => match &self.queue {
                Some(q) => identify::smart_log(&q.traffic),
                None => return Answer::status(invalid_field()),
            },
            0x03 => identify::firmware_log(),
            _ => return Answer::status(NvmeStatus::error(1, 0x09)), // Invalid Log Page
        };
        page_window(&page, offset, len)
    }

    /// Set Features (`set`: the value) or Get Features (`cdw11`: its CDW11, which selects a
    /// temperature threshold).
    fn features(&mut self, fid: u8, set: Option<u32>, cdw11: u32) -> Answer {
        let Some(q) = &self.queue else {
            return Answer::status(invalid_field());
        };
        let mut c = q.ctrl.lock();
        let io = !c.discovery;
        let value = match (fid, set) {
            (FEAT_ARBITRATION, Some(v)) if io => v,
            (FEAT_ARBITRATION, None) if io => *c.features.get(&fid).unwrap_or(&0),
            // PS (bits 4:0) names the only power state, 0; WH (bits 7:5) is kept.
            (FEAT_POWER, Some(v)) if io && v & 0x1F == 0 => v & 0xFF,
            (FEAT_POWER, None) if io => *c.features.get(&fid).unwrap_or(&0),
            // TMPSEL (bits 19:16) 0, the composite temperature; THSEL (bits 21:20) 0 over,
            // 1 under.
            (FEAT_TEMPERATURE, None) if io => match (cdw11 >> 16 & 0xF, cdw11 >> 20 & 0x3) {
                (0, 0) => OVER_TEMPERATURE_K,
                (0, 1) => 0,
                _ => return Answer::status(invalid_field()),
            },
            (FEAT_ERROR_RECOVERY, None) if io => 0,
            // Granted: the count asked, up to IO_QUEUES, for both kinds.
            (FEAT_QUEUES, Some(v)) => {
                let n = (v & 0xFFFF).max(v >> 16).min(IO_QUEUES);
                n | n << 16
            }
            (FEAT_QUEUES, None) => *c
                .features
                .get(&fid)
                .unwrap_or(&(IO_QUEUES << 16 | IO_QUEUES)),
            (FEAT_KEEP_ALIVE, Some(v)) => {
                // The keep-alive timer restarts with the new KATO after this command.
                c.kato_ms = v;
                v
            }
            (FEAT_KEEP_ALIVE, None) => c.kato_ms,
            (FEAT_ASYNC_EVENTS, Some(v)) => v,
            (FEAT_ASYNC_EVENTS, None) => *c.features.get(&fid).unwrap_or(&0),
            _ => return Answer::status(invalid_field()),
        };
        if set.is_some() {
            c.features.insert(fid, value);
        }
        Answer::ok(value)
    }
}
