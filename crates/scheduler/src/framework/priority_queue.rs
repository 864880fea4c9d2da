//! A binary heap ordered by a comparison that may read changing session state, with the same
//! sift steps as Go's `container/heap`, so that orders match Volcano's even when an item's key
//! changes while it waits in the heap.

/// A heap whose order is supplied on each push and pop.
#[derive(Debug, Clone)]
pub struct PriorityQueue<T> {
    items: Vec<T>,
}

impl<T> Default for PriorityQueue<T> {
    fn default() -> Self {
        PriorityQueue { items: Vec::new() }
    }
}

impl<T: Copy> PriorityQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        PriorityQueue { items: Vec::new() }
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds an item; `less(a, b)` says `a` comes before `b`.
    pub fn push(&mut self, item: T, less: &mut impl FnMut(T, T) -> bool) {
        self.items.push(item);
        let mut j = self.items.len() - 1;
        while j > 0 {
            let i = (j - 1) / 2;
            if !less(self.items[j], self.items[i]) {
                break;
            }
            self.items.swap(i, j);
            j = i;
        }
    }

    /// Removes the first item.
    pub fn pop(&mut self, less: &mut impl FnMut(T, T) -> bool) -> Option<T> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        self.items.swap(0, n - 1);
        let last = n - 1;
        let mut i = 0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= last {
                break;
            }
            let mut j = j1;
            let j2 = j1 + 1;
            if j2 < last && less(self.items[j2], self.items[j1]) {
                j = j2;
            }
            if !less(self.items[j], self.items[i]) {
                break;
            }
            self.items.swap(i, j);
            i = j;
        }
        self.items.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_order() {
        let mut q = PriorityQueue::new();
        let mut less = |a: i32, b: i32| a < b;
        for v in [5, 1, 4, 2, 3] {
            q.push(v, &mut less);
        }
        let out: Vec<i32> = std::iter::from_fn(|| q.pop(&mut less)).collect();
        assert_eq!(out, [1, 2, 3, 4, 5]);
    }
}
